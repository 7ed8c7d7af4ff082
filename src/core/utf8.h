// UTF-8 validation: what a label value, a host name or a kubelet's pod name must be before gpulse
// keeps it. Thread-safe: a pure function.
#pragma once

#include <string_view>

namespace gpulse {

// True when `text` is well-formed UTF-8: no overlong forms, no surrogates (U+D800..U+DFFF), nothing
// above U+10FFFF.
bool IsValidUtf8(std::string_view text);

}  // namespace gpulse
