// A command line as a shell would need it typed: each word as is when it holds only characters no
// shell treats specially, else in single quotes (a quote inside as '\''). For the reports' "command"
// lines (issue 40: `sh -c "echo a b"` printed as `sh -c echo a b`). Thread-safe: pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpulse {

std::string ShellQuote(std::string_view word);
std::string ShellJoin(const std::vector<std::string>& words);

}  // namespace gpulse
