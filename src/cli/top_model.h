// `gpulse top`'s model of one live frame (docs/schema/live-frame.schema.json): the frame's JSON
// read into plain structs, so the renderer never touches JSON. A null reading (absent, never zero)
// becomes nullopt; so does a reading of the wrong type. A frame whose "format" is not
// gpulse.live-frame/v1, or whose entities or processes are not arrays of objects, is refused.
//
// Thread-safety: pure functions of their arguments.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gpulse::cli::top {

inline constexpr const char* kFrameFormat = "gpulse.live-frame/v1";

enum class PanelState { kOk, kLost, kSkipped };

using Reading = std::optional<double>;
using History = std::vector<Reading>;  // oldest first; nullopt where the reading was absent

struct EntityModel {
  std::int64_t entity = 0;  // position in the server's entity list
  bool instance = false;    // a GPU instance (MIG) rather than a whole GPU
  unsigned gpu = 0;         // NVML index (the parent GPU for an instance)
  std::optional<unsigned> gpu_instance_id;
  std::optional<std::string> profile, name, uuid, pci_bus_id;
  PanelState state = PanelState::kOk;
  std::optional<std::string> reason;  // why lost or skipped
  // The recommended action of the GPU's pending faults (docs/faults.md) and its Xid; absent when
  // nothing is pending.
  std::optional<std::string> action;
  std::optional<std::int64_t> action_xid;
  Reading utilization_percent;
  Reading memory_used_bytes, memory_total_bytes;
  Reading power_watts, power_limit_watts;
  Reading temperature_celsius;
  Reading sm_clock_mhz, sm_clock_max_mhz;
  Reading memory_clock_mhz, memory_clock_max_mhz;
  History utilization_history, power_history;
};

struct ProcessModel {
  std::int64_t pid = 0;
  std::optional<std::string> user;
  unsigned gpu = 0;
  std::optional<unsigned> gpu_instance_id;
  Reading memory_bytes, sm_percent;
  std::optional<std::string> container, pod, command;
};

struct FrameModel {
  std::int64_t seq = 0;
  double timestamp_unix = 0;
  double interval_seconds = 0;
  std::string source;  // "exporter", "agent" or "direct"
  std::string hostname;
  bool simulated = false;
  std::optional<std::string> scenario;
  std::optional<std::int64_t> viewers;
  std::int64_t dropped_frames_total = 0;
  std::int64_t history_points = 0;
  std::vector<EntityModel> entities;
  std::vector<ProcessModel> processes;
  std::optional<std::string> process_note;
};

// Reads one frame. InvalidArgument (naming what is wrong) for a frame that is not an object, has
// another format, or whose entities/processes are not arrays of objects.
Result<FrameModel> ParseFrame(const nlohmann::json& frame);

// The number of distinct physical GPUs the frame's entities belong to.
std::size_t GpuCount(const FrameModel& frame);

}  // namespace gpulse::cli::top
