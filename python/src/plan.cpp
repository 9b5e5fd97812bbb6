// dsv4_cache._core, planner and contract: typed bindings of the C++ core. The Python package fills
// a `PlanArgs` (the C++ `planner_args`: the planner's inputs, field for field) with typed values
// and calls the same functions as dsv4-cache-plan and dsv4-cache-layout (`compute`,
// `describe_descriptor`, `layout_from_flags`, `diff_descriptors`); the results are the C++ types
// (`planner_result`, `memory_plan`, `group_plan`, `plan_verdict`, `engine_report`,
// `rank_plan_result`) bound with their C++ names. No argv is built and no CLI parser is linked:
// the values get the CLI's rules through `check_values` (planner_args.hpp), so a bad value raises
// ValueError with the CLI's message for the flag (the Python layer puts its parameter's name in).
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "core.hpp"
#include "dsv4/tools/contract.hpp"
#include "dsv4/tools/render_json.hpp"
#include "dsv4/tools/render_screen.hpp"
#include "dsv4/tools/render_svg.hpp"
#include "dsv4/tools/render_tables.hpp"
#include "dsv4/tools/transfer.hpp"

#ifdef CLI11_VERSION
#error "the Python extension parses no command line: include the *_args / report headers, not CLI11's"
#endif

namespace nb = nanobind;

namespace dsv4::python {

namespace {

using cache::group_plan;
using cache::memory_plan;
using cache::rank_plan_result;
using cache::cli::planner_args;
using cache::cli::planner_result;

std::string dump(const nlohmann::ordered_json& j) {
  // replace: a model name from a file name need not be valid UTF-8 (as the CLI's --json)
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::vector<group_plan> groups_of(const memory_plan& p) { return {p.begin(), p.end()}; }

void bind_args(nb::module_& m) {
  nb::class_<planner_args>(m, "PlanArgs",
                           "The planner's inputs (C++ planner_args): each field is the dsv4-cache-plan flag of its "
                           "name; None / empty leaves it to the engine's default. Sizes in GiB per GPU, contexts "
                           "in tokens.")
      .def(nb::init<>())
      .def_rw("preset", &planner_args::preset, "Built-in model name (--preset)")
      .def_rw("preset_given", &planner_args::preset_given, "False: errors name the model, not --preset")
      .def_rw("config_path", &planner_args::config_path, "A config.json or a model directory (--config)")
      .def_rw("config_text", &planner_args::config_text, "A config.json's text, in place of config_path")
      .def_rw("config_name", &planner_args::config_name, "The model's name for config_text")
      .def_rw("context", &planner_args::context, "L, tokens (None: max_position_embeddings)")
      .def_rw("requests", &planner_args::requests, "N, concurrent requests")
      .def_rw("memory_gib", &planner_args::memory_gib, "KV budget per GPU, GiB")
      .def_rw("indexer", &planner_args::indexer, "V4 index-key format: fp8 or mxfp4")
      .def_rw("format_set", &planner_args::format_set, "V4.1 format set: v41 or v4")
      .def_rw("kv_format", &planner_args::kv_format, "Row format of every main-KV pool")
      .def_rw("group_formats", &planner_args::group_formats, "GROUP=NAME items (--format)")
      .def_rw("indexer_format", &planner_args::indexer_format, "Row format of the index keys")
      .def_rw("tokens_per_step", &planner_args::tokens_per_step, "s, tokens per decode step")
      .def_rw("prefill_chunk", &planner_args::prefill_chunk, "B, tokens of one scheduler step")
      .def_rw("mtp", &planner_args::mtp, "--mtp")
      .def_rw("no_mtp", &planner_args::no_mtp, "--no-mtp")
      .def_rw("gpu", &planner_args::gpu, "GPU name (empty: H200, assumed)")
      .def_rw("dp_attention", &planner_args::dp_attention, "SGLang --enable-dp-attention")
      .def_rw("engine", &planner_args::engine, "Engine name or name@preset")
      .def_rw("pools", &planner_args::pools, "engine or own")
      .def_rw("max_running", &planner_args::max_running, "The engine's running cap, requests")
      .def_rw("swa_ratio", &planner_args::swa_ratio, "SGLang --swa-full-tokens-ratio")
      .def_rw("overlap", &planner_args::overlap, "--overlap")
      .def_rw("no_overlap", &planner_args::no_overlap, "--no-overlap")
      .def_rw("simulate", &planner_args::simulate, "--simulate")
      .def_rw("tp", &planner_args::tp)
      .def_rw("dp", &planner_args::dp)
      .def_rw("pp", &planner_args::pp)
      .def_rw("pp_layers", &planner_args::pp_layers, "Main layers per stage, \"22,21\"")
      .def_rw("dcp", &planner_args::dcp)
      .def_rw("dcp_interleave", &planner_args::dcp_interleave, "Rows dealt to one DCP rank in turn")
      .def_rw("role", &planner_args::role, "colocated, prefill or decode")
      .def_rw("handover", &planner_args::handover, "Decode role: requests being received, requests")
      .def_rw("gpu_memory_gib", &planner_args::gpu_memory_gib, "GPU memory, GiB")
      .def_rw("reserved_gib", &planner_args::reserved_gib, "Memory for weights and activations, GiB")
      .def_rw("gpu_memory_utilization", &planner_args::gpu_memory_utilization)
      .def_rw("mem_fraction_static", &planner_args::mem_fraction_static)
      .def_rw("kv_cache_memory_bytes", &planner_args::kv_cache_memory_bytes, "vLLM's fixed KV budget, bytes")
      .def_rw("ep", &planner_args::ep, "Expert-parallel GPUs for the weights");

  nb::class_<tools::contract_args>(m, "ContractArgs",
                                   "describe / fingerprint's inputs (C++ contract_args): the planner's model, format "
                                   "and parallel fields, the engine whose placement to record, the rank.")
      .def(nb::init<>())
      .def_rw("plan", &tools::contract_args::plan, "The model, format and parallel inputs (PlanArgs)")
      .def_rw("engine_given", &tools::contract_args::engine_given, "Record plan.engine's placement (schema /2)")
      .def_rw("rank", &tools::contract_args::rank, "With parallel fields: the rank to describe (None: 0)");

  m.def(
      "memory_size_gib",
      [](const std::string& flag, const std::string& text) { return cache::cli::memory_size_gib(flag, text); },
      nb::arg("flag"), nb::arg("text"),
      "A memory size as typed (\"141GB\", \"80 GiB\" without the blank) in GiB; ValueError with the CLI's rule.");
}

void bind_results(nb::module_& m) {
  nb::class_<cache::pool_spec>(m, "PoolSpec", "One pool of a group (C++ pool_spec): its row format and sizes.")
      .def_prop_ro(
          "format", [](const cache::pool_spec& p) { return std::string(p.format.name); }, "registry name")
      .def_ro("rows_per_page", &cache::pool_spec::rows_per_page, "rows")
      .def_ro("row_bytes", &cache::pool_spec::row_bytes, "bytes per row")
      .def_ro("page_bytes", &cache::pool_spec::page_bytes, "bytes per page, padding included");

  using cache::paged_cache_group_spec;
  nb::class_<paged_cache_group_spec>(m, "GroupSpec",
                                     "A paged cache group (C++ paged_cache_group_spec): its rows, pages and pools per "
                                     "layer, and the layers that keep a pool of it.")
      .def_prop_ro(
          "id", [](const paged_cache_group_spec& g) { return cache::to_string(g.id); }, "e.g. \"v4.swa_kv\"")
      .def_prop_ro("family", [](const paged_cache_group_spec& g) { return std::string(cache::to_string(g.family)); })
      .def_prop_ro("retention",
                   [](const paged_cache_group_spec& g) { return std::string(cache::to_string(g.retention)); })
      .def_prop_ro("prefix_cache",
                   [](const paged_cache_group_spec& g) { return std::string(cache::to_string(g.prefix)); })
      .def_ro("rows_per_page", &paged_cache_group_spec::rows_per_page, "rows (slots)")
      .def_ro("entry_stride_tokens", &paged_cache_group_spec::entry_stride_tokens, "tokens per row")
      .def_prop_ro("page_size_tokens", &paged_cache_group_spec::page_size_tokens, "tokens")
      .def_ro("sliding_window_tokens", &paged_cache_group_spec::sliding_window_tokens,
              "the model's window, tokens (0: full history)")
      .def_ro("num_layers", &paged_cache_group_spec::num_layers)
      .def_prop_ro(
          "layers",
          [](const paged_cache_group_spec& g) {
            return std::vector<int>(g.layers.begin(), g.layers.begin() + g.num_layers);
          },
          "the layers that keep a pool of it, ascending")
      .def_prop_ro("row_bytes", &paged_cache_group_spec::row_bytes, "bytes, all pools")
      .def_prop_ro("page_bytes", &paged_cache_group_spec::page_bytes, "bytes, all pools")
      .def_prop_ro(
          "pools",
          [](const paged_cache_group_spec& g) { return std::vector<cache::pool_spec>(g.pools, g.pools + g.num_pools); },
          "its pools (PoolSpec)");

  nb::class_<group_plan>(m, "GroupPlan",
                         "A paged cache group and its pages in a plan (C++ group_plan and its paged_cache_group_spec). "
                         "Bytes, rows, tokens and pages per layer as named.")
      .def_ro("spec", &group_plan::spec, "the group (GroupSpec); its fields are also the plan's, below")
      .def_prop_ro(
          "id", [](const group_plan& g) { return cache::to_string(g.spec.id); }, "e.g. \"v4.swa_kv\"")
      .def_prop_ro("family", [](const group_plan& g) { return std::string(cache::to_string(g.spec.family)); })
      .def_prop_ro(
          "retention", [](const group_plan& g) { return std::string(cache::to_string(g.spec.retention)); },
          "\"full\" or \"sliding\"")
      .def_prop_ro("prefix_cache", [](const group_plan& g) { return std::string(cache::to_string(g.spec.prefix)); })
      .def_prop_ro(
          "rows_per_page", [](const group_plan& g) { return g.spec.rows_per_page; }, "rows (slots)")
      .def_prop_ro(
          "entry_stride_tokens", [](const group_plan& g) { return g.spec.entry_stride_tokens; }, "tokens per row")
      .def_prop_ro(
          "page_size_tokens", [](const group_plan& g) { return g.spec.page_size_tokens(); }, "tokens")
      .def_prop_ro(
          "sliding_window_tokens",
          [](const group_plan& g) {
            return g.spec.has_sliding_window() ? std::optional<std::int64_t>(g.window_tokens) : std::nullopt;
          },
          "the window the plan holds, tokens; None for full history")
      .def_prop_ro("num_layers", [](const group_plan& g) { return g.spec.num_layers; })
      .def_prop_ro(
          "row_bytes", [](const group_plan& g) { return g.spec.row_bytes(); }, "bytes, all pools")
      .def_prop_ro(
          "page_bytes", [](const group_plan& g) { return g.spec.page_bytes(); }, "bytes, all pools")
      .def_prop_ro(
          "pools",
          [](const group_plan& g) {
            return std::vector<cache::pool_spec>(g.spec.pools, g.spec.pools + g.spec.num_pools);
          },
          "its pools (PoolSpec): 2 for CSA's compressed KV and V4.1's global groups, else 1")
      .def_prop_ro(
          "pool_pages",
          [](const group_plan& g) {
            return std::vector<std::int64_t>(g.pool_pages.begin(), g.pool_pages.begin() + g.spec.num_pools);
          },
          "pages per layer of each pool")
      .def_ro("window_tokens", &group_plan::window_tokens, "W for sliding groups, tokens; 0 for full history")
      .def_ro("pages_per_request", &group_plan::pages_per_request, "pages of one request in one layer")
      .def_ro("shared_pages", &group_plan::shared_pages, "pages per layer of the prompts a step admits")
      .def_ro("pages_per_layer", &group_plan::pages_per_layer, "pages per layer, the null page included")
      .def_prop_ro("pages", &group_plan::total_pages, "pages over its layers")
      .def_ro("bytes", &group_plan::bytes, "bytes over its pools and layers")
      .def_ro("ideal_bytes", &group_plan::ideal_bytes, "exact row bytes of the holding requests, no paging");

  nb::class_<memory_plan>(m, "MemoryPlan", "A memory plan (C++ memory_plan): per GPU, bytes, pages and requests.")
      .def_prop_ro("engine", [](const memory_plan& p) { return std::string(p.options.policy.engine); })
      .def_prop_ro(
          "structure", [](const memory_plan& p) { return std::string(cache::to_string(p.pools.structure)); },
          "how pages become bytes: own pools, vLLM's shared block pool, tokenspeed's arena, SGLang's pools")
      .def_prop_ro(
          "requests", [](const memory_plan& p) { return p.options.requests; }, "N")
      .def_prop_ro(
          "context_tokens", [](const memory_plan& p) { return p.options.context_tokens; }, "L, tokens")
      .def_prop_ro("tokens_per_step", [](const memory_plan& p) { return p.options.tokens_per_step; })
      .def_prop_ro("prefill_chunk_tokens", [](const memory_plan& p) { return p.options.prefill_chunk_tokens; })
      .def_prop_ro("cache_mtp", [](const memory_plan& p) { return p.options.cache_mtp; })
      .def_ro("holding_requests", &memory_plan::holding_requests, "H: requests holding pages at once")
      .def_prop_ro("groups", &groups_of, "every group's plan (GroupPlan)")
      .def_ro("total_bytes", &memory_plan::total_bytes, "bytes per GPU")
      .def_ro("ideal_bytes", &memory_plan::ideal_bytes, "the groups' ideal bytes")
      .def_prop_ro("overhead", &memory_plan::overhead, "total_bytes / ideal_bytes")
      .def_prop_ro(
          "bytes_per_block", [](const memory_plan& p) { return p.pools.bytes_per_block; },
          "shared block pool: bytes of one block (every group's layer pages)")
      .def_ro("num_blocks", &memory_plan::num_blocks, "shared block pool: the plan's blocks, the null block included")
      .def_ro("planned_blocks", &memory_plan::planned_blocks)
      .def_ro("startup_blocks", &memory_plan::startup_blocks)
      .def_ro("admission_blocks", &memory_plan::admission_blocks);

  nb::class_<rank_plan_result>(m, "RankPlan", "One GPU rank's plan (C++ rank_plan_result).")
      .def_prop_ro("rank", [](const rank_plan_result& r) { return r.coords.rank; })
      .def_prop_ro("tp_rank", [](const rank_plan_result& r) { return r.coords.tp_rank; })
      .def_prop_ro("dp_rank", [](const rank_plan_result& r) { return r.coords.dp_rank; })
      .def_prop_ro(
          "stage", [](const rank_plan_result& r) { return r.coords.stage; }, "pipeline stage")
      .def_prop_ro("dcp_rank", [](const rank_plan_result& r) { return r.coords.dcp_rank; })
      .def_prop_ro(
          "main_layers",
          [](const rank_plan_result& r) {
            return std::pair{r.main_layers.first, r.main_layers.end};
          },
          "main layers [first, end) of its stage")
      .def_ro("mtp_layers", &rank_plan_result::mtp_layers, "whether it holds the MTP layers")
      .def_ro("requests", &rank_plan_result::requests, "its data-parallel share of N")
      .def_ro("plan", &rank_plan_result::plan, "its MemoryPlan");

  using cache::cli::plan_verdict;
  nb::class_<plan_verdict>(m, "Verdict",
                           "The operator screen's verdict (C++ plan_verdict): max_requests is what really fits (the "
                           "engine's allocator replayed), plan_max_requests what the plan's bytes guarantee.")
      .def_ro("has_budget", &plan_verdict::has_budget)
      .def_prop_ro(
          "fits", [](const plan_verdict& v) { return v.has_budget ? std::optional(v.fits) : std::nullopt; },
          "N x L fits the budget (None without one)")
      .def_ro("requests", &plan_verdict::requests, "N (the whole deployment)")
      .def_ro("context_tokens", &plan_verdict::context_tokens, "L")
      .def_ro("plan_max_requests", &plan_verdict::plan_max_requests)
      .def_ro("engine_starts", &plan_verdict::engine_starts)
      .def_ro("simulated_max_requests", &plan_verdict::simulated_max_requests)
      .def_ro("simulated_lower_bound", &plan_verdict::simulated_lower_bound)
      .def_ro("max_requests", &plan_verdict::max_requests, "what really fits (0: the engine does not start)")
      .def_ro("max_requests_lower_bound", &plan_verdict::max_requests_lower_bound)
      .def_ro("max_requests_by_plan", &plan_verdict::by_plan)
      .def_ro("by_plan_why", &plan_verdict::by_plan_why)
      .def_ro("limit", &plan_verdict::limit, "budget, running cap, startup check or single-request limit")
      .def_ro("limit_text", &plan_verdict::limit_text)
      .def_ro("why", &plan_verdict::why, "why N does not fit (empty when it fits)")
      .def_prop_ro("line", &cache::cli::verdict_line, "the screen's verdict line")
      .def_prop_ro("bound", &cache::cli::bound_text, "the plan's bound, labelled")
      .def("__bool__", [](const plan_verdict& v) { return v.has_budget && v.fits; })
      .def("__str__", &cache::cli::verdict_line);

  using cache::cli::plan_hint;
  nb::class_<plan_hint>(m, "Hint", "One flag change that plans more requests in the same budget.")
      .def_ro("flag", &plan_hint::flag)
      .def_ro("requests_now", &plan_hint::requests_now)
      .def_ro("requests_then", &plan_hint::requests_then)
      .def_ro("why", &plan_hint::why);

  using cache::engine_fit;
  nb::class_<engine_fit>(m, "EngineFit",
                         "What really fits on the engine's pool, replayed (C++ engine_fit), per engine.")
      .def_ro("simulated", &engine_fit::simulated)
      .def_ro("why_not", &engine_fit::why_not)
      .def_ro("max_requests", &engine_fit::max_requests, "requests of L with no preemption, per engine (DP rank)")
      .def_ro("max_context_tokens", &engine_fit::max_context_tokens, "for the plan's requests, tokens")
      .def_ro("lower_bound", &engine_fit::lower_bound)
      .def_ro("context_lower_bound", &engine_fit::context_lower_bound)
      .def_ro("requests_by_plan", &engine_fit::requests_by_plan)
      .def_ro("work", &engine_fit::work, "request visits the replays made");

  using cache::cli::engine_report;
  nb::class_<engine_report>(m, "EngineReport",
                            "The engine's own view (C++ engine_report): its pool structure, its startup figures and, "
                            "with a budget, what really fits (`fit`). to_dict() of the plan holds every figure.")
      .def_prop_ro("engine", [](const engine_report& r) { return std::string(r.engine->name); })
      .def_prop_ro("structure", [](const engine_report& r) { return std::string(cache::to_string(r.structure)); })
      .def_ro("async_scheduling", &engine_report::async_scheduling)
      .def_ro("max_running", &engine_report::max_running, "the running cap the replay applies (0: none)")
      .def_ro("dp", &engine_report::dp, "engines the requests are split over")
      .def_ro("engine_requests", &engine_report::engine_requests, "the plan's requests on the busiest engine")
      .def_ro("fit", &engine_report::fit, "EngineFit (with a budget)")
      .def_prop_ro(
          "log_lines", [](const engine_report& r) { return r.startup.log_lines; },
          "what the engine logs at startup for this plan")
      .def_prop_ro(
          "refusal", [](const engine_report& r) { return r.startup.refusal; },
          "the engine's startup error for this plan (empty when it starts)");

  using cache::cache_layout;
  nb::class_<cache_layout>(m, "Layout",
                           "A deployment's cache layout (C++ cache_layout): what decides where its cache bytes go, "
                           "the value a descriptor's `layout` and `fingerprint` are made of. Layouts compare equal "
                           "when their canonical bytes are equal.")
      .def_prop_ro("family", [](const cache_layout& l) { return std::string(cache::to_string(l.family)); })
      .def_ro("num_layers", &cache_layout::num_layers, "layers, the MTP layers included")
      .def_prop_ro(
          "layers",
          [](const cache_layout& l) {
            std::vector<std::tuple<int, std::string, int, std::string, int>> out;
            for (int i = 0; i < l.num_layers; ++i) {
              const cache::layout_layer& x = l.layers[static_cast<std::size_t>(i)];
              out.emplace_back(x.index, std::string(cache::to_string(x.attention)), x.ratio, std::string(x.role_name()),
                               x.owner);
            }
            return out;
          },
          "[(index, attention, compress ratio, role, owner layer)]")
      .def_prop_ro(
          "groups",
          [](const cache_layout& l) {
            return std::vector<cache::paged_cache_group_spec>(l.groups.begin(), l.groups.end());
          },
          "the groups (GroupSpec)")
      .def_prop_ro(
          "engine",
          [](const cache_layout& l) {
            return l.engine.present ? std::optional(std::string(l.engine.name)) : std::nullopt;
          },
          "the engine whose placement it records (schema /2), None for the library's own pages")
      .def_prop_ro(
          "canonical", [](const cache_layout& l) { return std::string(cache::canonical_layout(l).view()); },
          "the canonical layout text (the bytes the fingerprint hashes)")
      .def_prop_ro(
          "fingerprint", [](const cache_layout& l) { return cache::fingerprint(l); }, "XXH64 of the canonical bytes")
      .def(
          "__eq__",
          [](const cache_layout& a, nb::handle b) -> nb::object {
            if (!nb::isinstance<cache_layout>(b)) return nb::borrow(Py_NotImplemented);
            return nb::bool_(cache::canonical_layout(a).view() ==
                             cache::canonical_layout(nb::cast<const cache_layout&>(b)).view());
          },
          nb::arg("other").none(), nb::sig("def __eq__(self, other: object, /) -> bool"))
      .def("__hash__", [](const cache_layout& l) { return cache::fingerprint(l); });

  nb::class_<planner_result>(m, "PlanResult",
                             "A computed plan (C++ planner_result): the model, the memory plan, the engine report, the "
                             "ranks, the verdict; json() / screen() / summary() / tables() / svg() render it as "
                             "dsv4-cache-plan does.")
      .def_ro("plan", &planner_result::plan, "the MemoryPlan of the whole model on one GPU (each rank's: `ranks`)")
      .def_ro("report", &planner_result::report, "the EngineReport (None for own pools)")
      .def_ro("budget_bytes", &planner_result::budget_bytes, "the KV budget per GPU, bytes (None without one)")
      .def_ro("max_running", &planner_result::max_running, "the engine's running cap, requests")
      .def_ro("ranks", &planner_result::ranks, "every rank's RankPlan (empty without parallel fields)")
      .def_ro("hint", &planner_result::hint)
      .def_ro("gpus", &planner_result::gpus)
      .def_prop_ro("verdict", &cache::cli::verdict_of)
      .def_prop_ro("model_name", [](const planner_result& r) { return std::string(r.model.name.view()); })
      .def_prop_ro("model_family",
                   [](const planner_result& r) { return std::string(cache::to_string(r.model.family)); })
      .def_prop_ro("num_hidden_layers", [](const planner_result& r) { return r.model.num_hidden_layers; })
      .def_prop_ro("num_nextn_predict_layers", [](const planner_result& r) { return r.model.num_nextn_predict_layers; })
      .def_prop_ro("max_position_embeddings", [](const planner_result& r) { return r.model.max_position_embeddings; })
      .def_prop_ro("sliding_window", [](const planner_result& r) { return r.model.sliding_window; })
      .def(
          "to_dict", [](const planner_result& r) { return to_python(cache::cli::to_json(r)); },
          nb::sig("def to_dict(self) -> dict[str, typing.Any]"),
          "The report as dsv4-cache-plan --json prints it, as Python objects.")
      .def(
          "json", [](const planner_result& r) { return dump(cache::cli::to_json(r)); },
          "The report as dsv4-cache-plan --json prints it (compact JSON text).")
      .def("screen", &cache::cli::screen_text, "The operator screen (dsv4-cache-plan's default output).")
      .def("summary", &cache::cli::summary_line, "The verdict as one line (dsv4-cache-plan --summary).")
      .def("tables", &cache::cli::to_text, "Every table (dsv4-cache-plan --verbose).");
}

}  // namespace

nb::object to_python(const nlohmann::ordered_json& j) {
  // Strings as the CLI's --json writes them: invalid UTF-8 (a model name from a file name) replaced.
  const auto utf8 = [](const std::string& s) {
    return nb::steal(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
  };
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return nb::none();
    case nlohmann::ordered_json::value_t::boolean: return nb::bool_(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return nb::int_(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      return nb::steal(PyLong_FromUnsignedLongLong(j.get<std::uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return nb::float_(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return utf8(j.get_ref<const std::string&>());
    case nlohmann::ordered_json::value_t::array: {
      nb::list l;
      for (const auto& v : j) l.append(to_python(v));
      return l;
    }
    case nlohmann::ordered_json::value_t::object: {
      nb::dict d;
      for (const auto& [k, v] : j.items()) d[utf8(k)] = to_python(v);
      return d;
    }
    default: throw std::invalid_argument("a JSON value of an unexpected type");  // binary: never made by the renderers
  }
}

void register_plan(nb::module_& m) {
  bind_args(m);
  bind_results(m);

  m.def(
      "compute",
      [](const planner_args& a) {
        const nb::gil_scoped_release release;
        return cache::cli::compute(a);
      },
      nb::arg("args"),
      "dsv4-cache-plan's report for `args` (PlanArgs): the C++ compute(), its checks included. ValueError for bad "
      "input, naming the flag of the field.");

  m.def(
      "svg",
      [](const planner_args& a, planner_result r) {
        const nb::gil_scoped_release release;
        cache::cli::check_values(a);  // the curves compute from `a`: the flags' rules first
        r.curves = cache::cli::capacity_curves(a, r.model);
        return cache::cli::plan_svg(r);
      },
      nb::arg("args"), nb::arg("result"),
      "The plan as an SVG image (dsv4-cache-plan --svg): group bars and the capacity curves of `args`.");

  m.def(
      "describe",
      [](const tools::contract_args& c) {
        nlohmann::ordered_json d;
        {
          const nb::gil_scoped_release release;
          d = tools::describe_descriptor(c);
        }
        return to_python(d);
      },
      nb::arg("args"), nb::sig("def describe(args: ContractArgs) -> dict[str, typing.Any]"),
      "dsv4-cache-layout describe's descriptor for `args` (ContractArgs), as Python objects.");

  m.def(
      "layout",
      [](const tools::contract_args& c) {
        const nb::gil_scoped_release release;
        return tools::layout_from_flags(c).first;
      },
      nb::arg("args"), "The typed cache layout (Layout) dsv4-cache-layout describe prints for `args` (ContractArgs).");

  m.def(
      "fingerprint",
      [](const tools::contract_args& c) {
        const nb::gil_scoped_release release;
        return cache::fingerprint(tools::layout_from_flags(c).first);
      },
      nb::arg("args"), "dsv4-cache-layout fingerprint's value (XXH64 of the canonical layout) for `args`.");

  m.def(
      "check",
      [](const std::string& text, const std::string& name) {
        const auto d = tools::contract_detail::parse_descriptor(text, name);
        std::string wrong = tools::contract_detail::first_wrong(d);
        const bool named = d.contains("fingerprint") && d["fingerprint"].is_string();
        if (wrong.empty() && !named) wrong = "fingerprint: missing or not a string";  // first_wrong checks its value
        return std::pair{wrong, named ? d["fingerprint"].get<std::string>() : std::string()};
      },
      nb::arg("text"), nb::arg("name"),
      "dsv4-cache-layout check: (the first wrong number, or '' when every number is right; the fingerprint).");

  m.def(
      "diff",
      [](const std::string& a_text, const std::string& b_text, const std::string& a_name, const std::string& b_name) {
        const auto a = tools::contract_detail::parse_descriptor(a_text, a_name);
        const auto b = tools::contract_detail::parse_descriptor(b_text, b_name);
        const tools::diff_result r = tools::diff_descriptors(a, b, a_name, b_name);
        std::vector<std::pair<int, std::string>> diffs;
        for (const tools::contract_detail::difference& d : r.differences) diffs.emplace_back(d.rank, d.text);
        return std::tuple{r.code, r.text, diffs};
      },
      nb::arg("a_text"), nb::arg("b_text"), nb::arg("a_name"), nb::arg("b_name"),
      "dsv4-cache-layout diff: (exit code 0 / 4 / 1, the text it prints, [(rank, difference)]).");

  m.def(
      "transfer",
      [](const std::string& p_text, const std::string& d_text, const std::string& p_name, const std::string& d_name,
         std::int64_t prompt_len, std::int64_t prefix,
         const std::optional<std::pair<std::vector<std::vector<std::int64_t>>, std::vector<std::vector<std::int64_t>>>>&
             blocks,
         std::int64_t prefill_dp_rank, std::int64_t decode_dp_rank) {
        const auto p = tools::contract_detail::parse_descriptor(p_text, p_name);
        const auto d = tools::contract_detail::parse_descriptor(d_text, d_name);
        tools::transfer_args a;
        a.descriptors = {p_name, d_name};
        a.prompt_len = prompt_len;
        a.prefix = prefix;
        a.prefill_dp_rank = prefill_dp_rank;
        a.decode_dp_rank = decode_dp_rank;
        std::optional<cache::transfer_blocks> given;
        if (blocks) given = cache::transfer_blocks{blocks->first, blocks->second};
        try {
          const tools::transfer_report r = tools::compute_transfer(p, d, p_name, d_name, a, given);
          return std::tuple{std::string(), tools::transfer_json(r, a).dump(), tools::transfer_nixl(r).dump(),
                            tools::transfer_mooncake(r).dump(), tools::transfer_text(r, a)};
        } catch (const tools::transfer_refused& e) {
          return std::tuple{std::string(e.what()), std::string(), std::string(), std::string(),
                            "refused: " + std::string(e.what()) + "\n"};
        }
      },
      nb::arg("prefill_text"), nb::arg("decode_text"), nb::arg("prefill_name"), nb::arg("decode_name"),
      nb::arg("prompt_len"), nb::arg("prefix"), nb::arg("blocks").none(), nb::arg("prefill_dp_rank"),
      nb::arg("decode_dp_rank"),
      "dsv4-cache-layout transfer: (why refused or '', --json, --nixl, --mooncake, the text it prints).");

  m.def("preset_names", &cache::cli::preset_names, "The built-in models' names and aliases (--preset).");
  m.def("engine_names", &cache::engine_names, "The registered engines' names (--engine), comma-separated.");
  m.attr("FIRST_COMPATIBLE_RANK") = tools::kFirstCompatibleRank;
}

}  // namespace dsv4::python
