// `gpulse top`'s view state (top_render.h): the sort keys, what each key does to the view, and the
// process list as it is shown (filtered to the selected GPU, sorted).
#include <algorithm>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/top_render.h"

namespace gpulse::cli::top {
namespace {

// The sort value of a process for `key`; nullopt sorts last.
Reading SortValue(const ProcessModel& p, SortKey key) {
  switch (key) {
    case SortKey::kMemory:
      return p.memory_bytes;
    case SortKey::kSm:
      return p.sm_percent;
    case SortKey::kPid:
      return static_cast<double>(p.pid);
    case SortKey::kGpu:
      return static_cast<double>(p.gpu);
  }
  return std::nullopt;
}

}  // namespace

std::optional<SortKey> ParseSortKey(std::string_view name) {
  if (name == "memory") return SortKey::kMemory;
  if (name == "sm") return SortKey::kSm;
  if (name == "pid") return SortKey::kPid;
  if (name == "gpu") return SortKey::kGpu;
  return std::nullopt;
}

const char* SortKeyName(SortKey key) {
  switch (key) {
    case SortKey::kMemory:
      return "memory";
    case SortKey::kSm:
      return "sm";
    case SortKey::kPid:
      return "pid";
    case SortKey::kGpu:
      return "gpu";
  }
  return "?";
}

KeyAction ApplyKey(int key, const FrameModel* frame, ViewState& view) {
  switch (key) {
    case 'q':
    case 'Q':
      return KeyAction::kQuit;
    case 's':
      view.sort = static_cast<SortKey>((static_cast<int>(view.sort) + 1) % 4);
      view.reverse = false;  // each column starts in its natural order
      return KeyAction::kChanged;
    case 'r':
      view.reverse = !view.reverse;
      return KeyAction::kChanged;
    case 'a':
      if (!view.selected_gpu) return KeyAction::kIgnored;
      view.selected_gpu.reset();
      return KeyAction::kChanged;
    case ' ':
    case 'p':
      view.paused = !view.paused;
      return KeyAction::kChanged;
    case 'h':
    case '?':
      view.help = !view.help;
      return KeyAction::kChanged;
    case 27:  // Esc
      if (!view.help) return KeyAction::kIgnored;
      view.help = false;
      return KeyAction::kChanged;
    default:
      break;
  }
  if (key >= '0' && key <= '9' && frame != nullptr) {
    auto gpu = static_cast<unsigned>(key - '0');
    bool known = std::any_of(frame->entities.begin(), frame->entities.end(),
                             [&](const EntityModel& e) { return e.gpu == gpu; });
    if (!known || view.selected_gpu == gpu) return KeyAction::kIgnored;
    view.selected_gpu = gpu;
    return KeyAction::kChanged;
  }
  return KeyAction::kIgnored;
}

std::vector<ProcessModel> ListedProcesses(const FrameModel& frame, const ViewState& view) {
  std::vector<ProcessModel> out;
  for (const ProcessModel& p : frame.processes) {
    if (!view.selected_gpu || p.gpu == *view.selected_gpu) out.push_back(p);
  }
  bool descending = (view.sort == SortKey::kMemory || view.sort == SortKey::kSm) != view.reverse;
  std::stable_sort(out.begin(), out.end(), [&](const ProcessModel& a, const ProcessModel& b) {
    Reading av = SortValue(a, view.sort), bv = SortValue(b, view.sort);
    if (av.has_value() != bv.has_value()) return av.has_value();
    if (av && *av != *bv) return descending ? *av > *bv : *av < *bv;
    if (a.gpu != b.gpu) return a.gpu < b.gpu;
    return a.pid < b.pid;
  });
  return out;
}

}  // namespace gpulse::cli::top
