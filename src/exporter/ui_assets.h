// The live page's files (src/exporter/ui), embedded at build time by ui/embed_ui.cmake: the page
// works offline and loads nothing from anywhere else.
#pragma once

#include <span>
#include <string_view>

namespace gpulse::exporter {

struct UiAsset {
  std::string_view path;          // "/ui" (index.html), "/ui/app.js", ...
  std::string_view content_type;
  std::string_view body;
};

std::span<const UiAsset> UiAssets();

// The asset served at `path`, or nullptr.
inline const UiAsset* FindUiAsset(std::string_view path) {
  for (const UiAsset& a : UiAssets())
    if (a.path == path) return &a;
  return nullptr;
}

}  // namespace gpulse::exporter
