// UTF-8 validation: what a label value, a host name or a kubelet's pod name must be before gpulse
// keeps it. Thread-safe: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace gpulse {

// True when `text` is well-formed UTF-8: no overlong forms, no surrogates (U+D800..U+DFFF), nothing
// above U+10FFFF.
bool IsValidUtf8(std::string_view text);

// `text` with each byte that does not begin a well-formed sequence replaced by U+FFFD (as
// Prometheus' and Go's decoders read it): what a string from a driver becomes before it goes into a
// label value, so that the page always parses.
std::string ReplaceInvalidUtf8(std::string_view text);

}  // namespace gpulse
