#include "power/readers/line_cutter.h"

#include <string.h>  // memrchr

#include <cstring>

namespace gpulse::power {

void LineCutter::Overlong() {
  on_overlong_();
  carry_.clear();
  skipping_ = true;
}

void LineCutter::Feed(std::string_view chunk) {
  if (skipping_) {
    size_t nl = chunk.find('\n');
    if (nl == std::string_view::npos) return;
    chunk.remove_prefix(nl + 1);
    skipping_ = false;
  }
  if (!carry_.empty()) {  // finish the line begun in an earlier chunk
    size_t nl = chunk.find('\n');
    size_t len = carry_.size() + (nl == std::string_view::npos ? chunk.size() : nl);
    if (len >= capacity_) {
      Overlong();
      if (nl == std::string_view::npos) return;
      skipping_ = false;
    } else if (nl == std::string_view::npos) {
      carry_.append(chunk);
      return;
    } else {
      carry_.append(chunk.substr(0, nl + 1));
      on_block_(carry_);
      carry_.clear();
    }
    chunk.remove_prefix(nl + 1);
  }
  const void* last = memrchr(chunk.data(), '\n', chunk.size());
  size_t whole = last ? static_cast<size_t>(static_cast<const char*>(last) - chunk.data()) + 1 : 0;
  if (whole > 0) on_block_(chunk.substr(0, whole));
  chunk.remove_prefix(whole);
  if (chunk.size() >= capacity_)
    Overlong();
  else
    carry_.assign(chunk);
}

void LineCutter::Finish() {
  if (!skipping_ && !carry_.empty()) on_block_(carry_);
  carry_.clear();
}

}  // namespace gpulse::power
