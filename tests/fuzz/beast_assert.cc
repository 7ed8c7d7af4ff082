// Boost's assertion handler for the HTTP targets (compiled with BOOST_ENABLE_ASSERT_HANDLER): a
// failed Boost assertion aborts as assert() would, so libFuzzer reports it, except one known false
// assertion of Boost 1.74's Beast. basic_parser::parse_chunk_header asserts `n >= 5` when it is
// re-entered after a final chunk's "0\r\n" with fewer bytes buffered; the code after it handles
// that case (it returns need_more), and upstream relaxed the assertion (boostorg/beast#2861,
// Boost 1.86). gpulse's builds define NDEBUG, where BOOST_ASSERT checks nothing, so this is not a
// gpulse bug; it would abort only a Debug build of the server (the asan preset) on such a chunked
// request.
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace boost {

void assertion_failed(char const* expr, char const* function, char const* file, long line) {
  if (std::strcmp(expr, "n >= 5") == 0 && std::strstr(function, "parse_chunk_header") != nullptr)
    return;
  std::fprintf(stderr, "%s:%ld: %s: Boost assertion `%s' failed.\n", file, line, function, expr);
  std::abort();
}

void assertion_failed_msg(char const* expr, char const* msg, char const* function, char const* file,
                          long line) {
  std::fprintf(stderr, "%s:%ld: %s: Boost assertion `%s' failed: %s\n", file, line, function, expr,
               msg);
  std::abort();
}

}  // namespace boost
