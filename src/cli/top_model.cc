// Reading a live frame's JSON into `gpulse top`'s model (top_model.h). Never throws: every value is
// type-checked before it is read, and a value of the wrong type reads as absent.
#include "cli/top_model.h"

#include <set>

namespace gpulse::cli::top {
namespace {

using nlohmann::json;

const json* Member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Reading Number(const json& object, const char* key) {
  const json* v = Member(object, key);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  return v->get<double>();
}

std::optional<std::string> String(const json& object, const char* key) {
  const json* v = Member(object, key);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

std::optional<std::int64_t> Integer(const json& object, const char* key) {
  const json* v = Member(object, key);
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  return v->get<std::int64_t>();
}

std::optional<unsigned> Index(const json& object, const char* key) {
  auto v = Integer(object, key);
  if (!v || *v < 0 || *v > 0xffffffffLL) return std::nullopt;
  return static_cast<unsigned>(*v);
}

bool Boolean(const json& object, const char* key) {
  const json* v = Member(object, key);
  return v != nullptr && v->is_boolean() && v->get<bool>();
}

History HistoryOf(const json& history, const char* key) {
  History out;
  const json* v = history.is_object() ? Member(history, key) : nullptr;
  if (v == nullptr || !v->is_array()) return out;
  out.reserve(v->size());
  for (const json& point : *v) {
    out.push_back(point.is_number() ? Reading(point.get<double>()) : std::nullopt);
  }
  return out;
}

PanelState StateOf(const std::optional<std::string>& state) {
  if (state == "lost") return PanelState::kLost;
  if (state == "skipped") return PanelState::kSkipped;
  return PanelState::kOk;
}

EntityModel ParseEntity(const json& e) {
  EntityModel m;
  m.entity = Integer(e, "entity").value_or(0);
  m.instance = String(e, "kind") == "gpu_instance";
  m.gpu = Index(e, "gpu").value_or(0);
  m.gpu_instance_id = Index(e, "gpu_instance_id");
  m.profile = String(e, "profile");
  m.name = String(e, "name");
  m.uuid = String(e, "uuid");
  m.pci_bus_id = String(e, "pci_bus_id");
  m.state = StateOf(String(e, "state"));
  m.reason = String(e, "reason");
  if (const json* a = Member(e, "recommended_action"); a != nullptr && a->is_object()) {
    m.action = String(*a, "action");
    m.action_xid = Integer(*a, "xid");
  }
  m.utilization_percent = Number(e, "utilization_percent");
  m.memory_used_bytes = Number(e, "memory_used_bytes");
  m.memory_total_bytes = Number(e, "memory_total_bytes");
  m.power_watts = Number(e, "power_watts");
  m.power_limit_watts = Number(e, "power_limit_watts");
  m.temperature_celsius = Number(e, "temperature_celsius");
  m.sm_clock_mhz = Number(e, "sm_clock_mhz");
  m.sm_clock_max_mhz = Number(e, "sm_clock_max_mhz");
  m.memory_clock_mhz = Number(e, "memory_clock_mhz");
  m.memory_clock_max_mhz = Number(e, "memory_clock_max_mhz");
  const json* history = Member(e, "history");
  if (history != nullptr) {
    m.utilization_history = HistoryOf(*history, "utilization_percent");
    m.power_history = HistoryOf(*history, "power_watts");
  }
  return m;
}

ProcessModel ParseProcess(const json& p) {
  ProcessModel m;
  m.pid = Integer(p, "pid").value_or(0);
  m.user = String(p, "user");
  m.gpu = Index(p, "gpu").value_or(0);
  m.gpu_instance_id = Index(p, "gpu_instance_id");
  m.memory_bytes = Number(p, "memory_bytes");
  m.sm_percent = Number(p, "sm_percent");
  m.container = String(p, "container");
  m.pod = String(p, "pod");
  m.command = String(p, "command");
  return m;
}

// The objects of frame[key]; an error when it is there but not an array of objects.
Result<std::vector<const json*>> Objects(const json& frame, const char* key) {
  std::vector<const json*> out;
  const json* v = Member(frame, key);
  if (v == nullptr || v->is_null()) return out;
  if (!v->is_array()) return InvalidArgument(std::string("\"") + key + "\" is not an array");
  for (const json& item : *v) {
    if (!item.is_object()) {
      return InvalidArgument(std::string("an item of \"") + key + "\" is not an object");
    }
    out.push_back(&item);
  }
  return out;
}

}  // namespace

Result<FrameModel> ParseFrame(const json& frame) {
  if (!frame.is_object()) return InvalidArgument("the frame is not a JSON object");
  auto format = String(frame, "format");
  if (format != kFrameFormat) {
    return InvalidArgument("unknown frame format " + (format ? '"' + *format + '"' : "(none)") +
                           ", expected " + kFrameFormat);
  }
  auto entities = Objects(frame, "entities");
  if (!entities) return entities.error();
  auto processes = Objects(frame, "processes");
  if (!processes) return processes.error();

  FrameModel m;
  m.seq = Integer(frame, "seq").value_or(0);
  m.timestamp_unix = Number(frame, "timestamp_unix").value_or(0);
  m.interval_seconds = Number(frame, "interval_seconds").value_or(0);
  m.source = String(frame, "source").value_or("");
  m.hostname = String(frame, "hostname").value_or("");
  m.simulated = Boolean(frame, "simulated");
  m.scenario = String(frame, "scenario");
  m.viewers = Integer(frame, "viewers");
  m.dropped_frames_total = Integer(frame, "dropped_frames_total").value_or(0);
  m.history_points = Integer(frame, "history_points").value_or(0);
  m.process_note = String(frame, "process_note");
  for (const json* e : *entities) m.entities.push_back(ParseEntity(*e));
  for (const json* p : *processes) m.processes.push_back(ParseProcess(*p));
  return m;
}

std::size_t GpuCount(const FrameModel& frame) {
  std::set<unsigned> gpus;
  for (const EntityModel& e : frame.entities) gpus.insert(e.gpu);
  return gpus.size();
}

}  // namespace gpulse::cli::top
