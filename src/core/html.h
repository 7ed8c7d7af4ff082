// Text for HTML and SVG: the five characters markup gives meaning to, escaped (&, <, >, " and ').
// Used by every page gpulse writes (the exporter's landing page, the run report). Pure.
#pragma once

#include <string>
#include <string_view>

namespace gpulse {

std::string EscapeHtml(std::string_view s);

}  // namespace gpulse
