// dsv4-cache tools: one way the CLIs hand their arguments to CLI11.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dsv4::tools {

namespace cli_parse_detail {
inline void allow_extras(CLI::App& app) {
  app.allow_extras();
  for (CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) allow_extras(*sub);
}
inline void collect_extras(const CLI::App& app, std::vector<std::string>& out) {
  for (const std::string& x : app.remaining()) out.push_back(x);
  for (const CLI::App* sub : app.get_subcommands()) collect_extras(*sub, out);  // the parsed ones
}
}  // namespace cli_parse_detail

/// Parses `args` (the command line without the program name) with `app` and its subcommands.
/// Throws what CLI11 throws (CLI::ParseError, CLI::CallForHelp); arguments nothing takes are a
/// CLI::ExtrasError whose message lists them in the order given (CLI11's own message lists the
/// back-to-front order it consumes a vector in).
inline void parse_args(CLI::App& app, const std::vector<std::string>& args) {
  cli_parse_detail::allow_extras(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes a vector from the back
  app.parse(reversed);
  std::vector<std::string> extras;
  cli_parse_detail::collect_extras(app, extras);
  // (ExtrasError joins its list back to front)
  if (!extras.empty()) throw CLI::ExtrasError(app.get_name(), std::vector<std::string>(extras.rbegin(), extras.rend()));
}

}  // namespace dsv4::tools
