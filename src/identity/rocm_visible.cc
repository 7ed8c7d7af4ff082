#include "identity/rocm_visible.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <variant>

#include "identity/mask_tokens.h"

namespace gpulse::identity {
namespace {

// What one token means: an agent position, the end of the list, a skipped duplicate (HIP), or a
// refusal.
struct Step {
  enum Kind { kAgent, kEnd, kSkip, kRefuse } kind = kEnd;
  std::size_t pos = 0;
  std::string why;
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// ROCr: one token of ROCR_VISIBLE_DEVICES over all agents.
Step RocrToken(std::string_view raw, std::span<const DeviceInfo> agents) {
  const std::string token = ToUpper(Trim(raw));
  if (!token.empty() && token.front() == 'G') {
    if (token.size() < 5 || token.size() > 20) {
      return {Step::kEnd, 0, "UUID token " + Quoted(raw) + " is not 5 to 20 characters long"};
    }
    std::vector<std::size_t> hits;
    for (std::size_t i = 0; i < agents.size(); ++i) {
      if (!agents[i].uuid.empty() && StartsWithIgnoringCase(agents[i].uuid, token)) {
        hits.push_back(i);
      }
    }
    if (hits.size() == 1) return {Step::kAgent, hits.front(), ""};
    return {
        Step::kEnd, 0,
        "UUID token " + Quoted(raw) + (hits.empty() ? " matches no GPU" : " matches several GPUs")};
  }
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(token.c_str(), &end, 0);
  if (end == token.c_str()) return {Step::kEnd, 0, "token " + Quoted(raw) + " is not a number"};
  if (*end != '\0') {
    return {Step::kRefuse, 0,
            "ROCR_VISIBLE_DEVICES token " + Quoted(raw) +
                " has characters after its number, and whether ROCr accepts "
                "that is not documented"};
  }
  if (errno != 0 || v < 0 || static_cast<unsigned long>(v) >= agents.size()) {
    return {
        Step::kEnd, 0,
        "index " + Quoted(raw) + " is out of range (" + std::to_string(agents.size()) + " GPUs)"};
  }
  return {Step::kAgent, static_cast<std::size_t>(v), ""};
}

// ROCr's filter: the surviving agents in list order, or a refusal.
std::variant<std::vector<std::size_t>, Refusal> ApplyRocr(const Environment& env,
                                                          std::span<const DeviceInfo> agents,
                                                          std::vector<std::string>& notes) {
  std::vector<std::size_t> out;
  auto mask = env.Get("ROCR_VISIBLE_DEVICES");
  if (!mask) {
    for (std::size_t i = 0; i < agents.size(); ++i) out.push_back(i);
    return out;
  }
  if (mask->empty()) {
    notes.push_back("ROCR_VISIBLE_DEVICES is set and empty: no GPU is visible");
    return out;
  }
  std::vector<std::string_view> tokens = SplitCommas(*mask);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    Step s = RocrToken(tokens[i], agents);
    if (s.kind == Step::kRefuse) return Refusal{s.why};
    if (s.kind == Step::kAgent && std::find(out.begin(), out.end(), s.pos) != out.end()) {
      s = {Step::kEnd, 0, "token " + Quoted(tokens[i]) + " repeats an earlier one"};
    }
    if (s.kind == Step::kEnd) {
      notes.push_back("ROCR_VISIBLE_DEVICES: " + s.why +
                      ": ROCr stops at the first invalid, "
                      "out-of-range or duplicate token, so its list ends before token " +
                      std::to_string(i));
      break;
    }
    out.push_back(s.pos);
  }
  return out;
}

// HIP/OpenCL (ROCclr): one token over the ROCr survivors.
Step ClrToken(std::string_view token, std::span<const DeviceInfo> agents,
              const std::vector<std::size_t>& survivors, std::string_view var) {
  if (HasWhitespace(token)) {
    return {Step::kRefuse, 0,
            std::string(var) + " entry " + Quoted(token) +
                " contains whitespace, and how ROCclr reads it is not documented"};
  }
  if (token.starts_with("GPU-")) {
    std::vector<std::size_t> hits;
    for (std::size_t k = 0; k < survivors.size(); ++k) {
      if (agents[survivors[k]].uuid.find(token) != std::string::npos) hits.push_back(k);
    }
    if (hits.size() == 1) return {Step::kAgent, hits.front(), ""};
    if (hits.empty()) return {Step::kEnd, 0, "UUID " + Quoted(token) + " matches no visible GPU"};
    return {Step::kRefuse, 0,
            std::string(var) + " entry " + Quoted(token) +
                " matches several GPUs, and which one ROCclr takes is not "
                "documented"};
  }
  if (auto i = ParseDecimal(token)) {
    if (*i >= survivors.size()) {
      return {Step::kEnd, 0,
              "index " + Quoted(token) + " is out of range (" + std::to_string(survivors.size()) +
                  " GPUs after ROCR_VISIBLE_DEVICES)"};
    }
    return {Step::kAgent, *i, ""};
  }
  if (!token.empty() && token.front() >= '0' && token.front() <= '9') {
    return {Step::kRefuse, 0,
            std::string(var) + " entry " + Quoted(token) +
                " is not a plain decimal index, and how ROCclr parses it is not "
                "documented"};
  }
  return {Step::kEnd, 0, "entry " + Quoted(token) + " is not an index or GPU UUID"};
}

}  // namespace

Mapping ResolveRocm(const Environment& env, std::span<const DeviceInfo> agents, RocmApi api) {
  Mapping m;
  auto rocr = ApplyRocr(env, agents, m.notes);
  if (auto* refusal = std::get_if<Refusal>(&rocr)) {
    m.refusal = *refusal;
    return m;
  }
  const auto& survivors = std::get<std::vector<std::size_t>>(rocr);
  std::string var;
  std::optional<std::string_view> mask;
  if (api == RocmApi::kHip) {
    for (const char* name : {"HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"}) {
      auto v = env.Get(name);
      if (v && !v->empty()) {
        var = name;
        mask = v;
        break;
      }
    }
    if (auto g = env.Get("GPU_DEVICE_ORDINAL")) {
      m.notes.push_back("GPU_DEVICE_ORDINAL=" + Quoted(*g) +
                        " is ignored: ROCclr reads it for "
                        "OpenCL only");
    }
  } else {
    var = "GPU_DEVICE_ORDINAL";
    auto v = env.Get(var);
    if (v && !v->empty()) mask = v;
  }
  std::vector<std::size_t> chosen;  // indices into survivors
  if (!mask) {
    for (std::size_t k = 0; k < survivors.size(); ++k) chosen.push_back(k);
  } else {
    std::vector<std::string_view> tokens = SplitCommas(*mask);
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      Step s = ClrToken(tokens[i], agents, survivors, var);
      if (s.kind == Step::kRefuse) {
        m.refusal = Refusal{s.why};
        break;
      }
      if (s.kind == Step::kEnd) {
        m.notes.push_back(var + ": " + s.why +
                          ": ROCclr stops at the first invalid entry, so "
                          "the list ends before entry " +
                          std::to_string(i));
        break;
      }
      if (std::find(chosen.begin(), chosen.end(), s.pos) != chosen.end()) {
        m.notes.push_back(var + ": entry " + std::to_string(i) + " " + Quoted(tokens[i]) +
                          " repeats an earlier one and is skipped");
        continue;
      }
      chosen.push_back(s.pos);
    }
  }
  for (std::size_t k : chosen) m.ordinals.push_back(ToPhysical(agents[survivors[k]]));
  return m;
}

}  // namespace gpulse::identity
