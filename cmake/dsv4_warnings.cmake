# Warning flags for the project's own test, example and benchmark targets (not the library's users).
function(dsv4_cache_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion -Werror>)
endfunction()
