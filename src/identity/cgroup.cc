#include "identity/cgroup.h"

#include <algorithm>

#include "identity/mask_tokens.h"

namespace gpulse::identity {
namespace {

constexpr std::size_t kContainerIdLength = 64;

bool IsHex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

bool IsContainerId(std::string_view s) { return s.size() == kContainerIdLength && IsHex(s); }

// "3f1c9a52_8d4e_4b7a_9e21_6c0d5a7b8e14" or "-" separated, or 32 hex digits → the uid with dashes.
std::optional<std::string> PodUid(std::string_view text) {
  std::string uid(text);
  std::replace(uid.begin(), uid.end(), '_', '-');
  if (uid.size() == 32 && IsHex(uid)) return uid;
  if (uid.size() != 36) return std::nullopt;
  for (std::size_t i = 0; i < uid.size(); ++i) {
    bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? uid[i] != '-' : !IsHex(std::string_view(&uid[i], 1))) return std::nullopt;
  }
  return uid;
}

std::vector<std::string_view> Components(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    std::string_view c =
        path.substr(start, slash == std::string_view::npos ? slash : slash - start);
    if (!c.empty()) out.push_back(c);
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return out;
}

// "<prefix><64 hex><suffix>" → the id.
std::optional<std::string> Wrapped(std::string_view c, std::string_view prefix,
                                   std::string_view suffix) {
  if (!c.starts_with(prefix) || !c.ends_with(suffix)) return std::nullopt;
  std::string_view id = c.substr(prefix.size(), c.size() - prefix.size() - suffix.size());
  if (!IsContainerId(id)) return std::nullopt;
  return std::string(id);
}

std::optional<ContainerRef> ContainerIn(std::string_view c, std::string_view parent) {
  struct Form {
    std::string_view prefix, suffix;
    ContainerRuntime runtime;
  };
  // conmon's own scopes ("crio-conmon-<id>.scope", "libpod-conmon-<id>.scope") do not match: the
  // text between prefix and suffix must be exactly a 64-hex id.
  static constexpr Form kForms[] = {
      {"docker-", ".scope", ContainerRuntime::kDocker},
      {"cri-containerd-", ".scope", ContainerRuntime::kContainerd},
      {"crio-", ".scope", ContainerRuntime::kCrio},
      {"crio-", "", ContainerRuntime::kCrio},
      {"libpod-", ".scope", ContainerRuntime::kPodman},
      {"libpod-", "", ContainerRuntime::kPodman},
  };
  for (const Form& f : kForms) {
    if (auto id = Wrapped(c, f.prefix, f.suffix)) return ContainerRef{*id, f.runtime};
  }
  if (IsContainerId(c)) {
    // cgroupfs driver: a bare id. Docker puts it under /docker; under a pod it can be any runtime.
    return ContainerRef{std::string(c), parent == "docker" ? ContainerRuntime::kDocker
                                                           : ContainerRuntime::kUnknown};
  }
  return std::nullopt;
}

// Pod cgroups: "pod<uid>" (cgroupfs) or "kubepods[-<qos>]-pod<uid>.slice" (systemd).
std::optional<std::string> PodIn(std::string_view c) {
  if (c.starts_with("pod")) return PodUid(c.substr(3));
  if (c.starts_with("kubepods-") && c.ends_with(".slice")) {
    std::size_t at = c.rfind("-pod");
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view uid = c.substr(at + 4, c.size() - at - 4 - std::string_view(".slice").size());
    return PodUid(uid);
  }
  return std::nullopt;
}

std::optional<QosClass> QosIn(std::string_view c) {
  if (c == "burstable" || c == "kubepods-burstable.slice") return QosClass::kBurstable;
  if (c == "besteffort" || c == "kubepods-besteffort.slice") return QosClass::kBestEffort;
  return std::nullopt;
}

// The QoS class a systemd pod slice names: "kubepods-burstable-pod…", "kubepods-besteffort-pod…",
// else ("kubepods-pod…") Guaranteed.
QosClass SliceQos(std::string_view c) {
  if (c.starts_with("kubepods-burstable-")) return QosClass::kBurstable;
  if (c.starts_with("kubepods-besteffort-")) return QosClass::kBestEffort;
  return QosClass::kGuaranteed;
}

bool Named(const CgroupPlacement& p) {
  return p.container.has_value() || p.pod.has_value() || p.slurm.has_value();
}

bool IsDecimal(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "job_<N>" → N.
std::optional<std::string> JobIn(std::string_view c) {
  if (!c.starts_with("job_") || !IsDecimal(c.substr(4))) return std::nullopt;
  return std::string(c.substr(4));
}

// Slurm's forms: the job's cgroup under "slurmstepd.scope" (v2), or under "uid_<U>" under
// "slurm" or "slurm_<node>" (v1); the step, when any, right below it.
std::optional<SlurmJobRef> SlurmIn(const std::vector<std::string_view>& parts) {
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    std::string_view c = parts[i];
    std::optional<unsigned> uid;
    if (c.starts_with("uid_") && i > 0 &&
        (parts[i - 1] == "slurm" || parts[i - 1].starts_with("slurm_"))) {
      uid = ParseDecimal(c.substr(4));
      if (!uid) continue;
    } else if (c != "slurmstepd.scope") {
      continue;
    }
    auto job = JobIn(parts[i + 1]);
    if (!job) continue;
    SlurmJobRef ref{*job, std::nullopt, uid};
    if (i + 2 < parts.size() && parts[i + 2].starts_with("step_") && parts[i + 2].size() > 5) {
      ref.step = std::string(parts[i + 2].substr(5));
    }
    return ref;
  }
  return std::nullopt;
}

// Lower is preferred among v1 lines.
int V1Rank(std::string_view controllers) {
  static constexpr std::string_view kOrder[] = {"pids", "memory", "cpu", "devices", "name=systemd"};
  for (std::size_t i = 0; i < std::size(kOrder); ++i) {
    for (std::string_view c : SplitCommas(controllers)) {
      if (c == kOrder[i]) return static_cast<int>(i);
    }
  }
  return static_cast<int>(std::size(kOrder));
}

}  // namespace

std::string_view RuntimeName(ContainerRuntime runtime) {
  switch (runtime) {
    case ContainerRuntime::kDocker:
      return "docker";
    case ContainerRuntime::kContainerd:
      return "containerd";
    case ContainerRuntime::kCrio:
      return "cri-o";
    case ContainerRuntime::kPodman:
      return "podman";
    case ContainerRuntime::kUnknown:
      break;
  }
  return "unknown";
}

std::string_view QosName(QosClass qos) {
  switch (qos) {
    case QosClass::kBurstable:
      return "Burstable";
    case QosClass::kBestEffort:
      return "BestEffort";
    case QosClass::kGuaranteed:
      break;
  }
  return "Guaranteed";
}

Result<std::vector<CgroupLine>> ParseProcCgroup(std::string_view text) {
  std::vector<CgroupLine> lines;
  int number = 0;
  while (!text.empty()) {
    std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    ++number;
    if (line.empty()) continue;
    std::size_t first = line.find(':');
    std::size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    auto hierarchy =
        first == std::string_view::npos ? std::nullopt : ParseDecimal(line.substr(0, first));
    if (!hierarchy || second == std::string_view::npos) {
      return InvalidArgument("cgroup line " + std::to_string(number) + " " + Quoted(line) +
                             " is not hierarchy-ID:controllers:path");
    }
    lines.push_back({*hierarchy, std::string(line.substr(first + 1, second - first - 1)),
                     std::string(line.substr(second + 1))});
  }
  return lines;
}

CgroupPlacement ClassifyPath(std::string_view path) {
  CgroupPlacement p;
  p.path = std::string(path);
  std::vector<std::string_view> parts = Components(path);
  // A path the kernel wrote relative to the reader's own cgroup namespace ("/../../…": gpulse in a
  // container reading the host's /proc) may start below kubepods.slice; the systemd driver's pod
  // slices name themselves ("kubepods-<qos>-pod<uid>.slice"), so they count there on their own.
  const bool relative = !parts.empty() && parts.front() == "..";
  bool kubepods = false;
  std::optional<QosClass> qos;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    std::string_view c = parts[i];
    if (c == "kubepods" || c == "kubepods.slice") kubepods = true;
    if (auto q = QosIn(c); q && kubepods) qos = *q;
    const bool self_named = relative && c.starts_with("kubepods-") && c.ends_with(".slice");
    if (auto uid = PodIn(c); uid && (kubepods || self_named)) {
      p.pod = PodRef{*uid, qos.value_or(kubepods ? QosClass::kGuaranteed : SliceQos(c))};
    }
    // The innermost container wins (a container inside a container names the inner one last).
    if (auto ref = ContainerIn(c, i > 0 ? parts[i - 1] : std::string_view{})) p.container = ref;
  }
  p.slurm = SlurmIn(parts);
  return p;
}

CgroupPlacement Place(std::span<const CgroupLine> lines) {
  const CgroupLine* v2 = nullptr;
  std::vector<const CgroupLine*> v1;
  for (const CgroupLine& l : lines) {
    if (l.hierarchy == 0 && l.controllers.empty()) {
      v2 = &l;
    } else {
      v1.push_back(&l);
    }
  }
  std::stable_sort(v1.begin(), v1.end(), [](const CgroupLine* a, const CgroupLine* b) {
    return V1Rank(a->controllers) < V1Rank(b->controllers);
  });
  if (v2 != nullptr) {
    CgroupPlacement p = ClassifyPath(v2->path);
    p.version = 2;
    if (Named(p) || v1.empty()) return p;
  }
  for (const CgroupLine* l : v1) {
    CgroupPlacement p = ClassifyPath(l->path);
    p.version = 1;
    if (Named(p)) return p;
  }
  CgroupPlacement p;
  if (v2 != nullptr) {
    p = ClassifyPath(v2->path);
    p.version = 2;
  } else if (!v1.empty()) {
    p = ClassifyPath(v1.front()->path);
    p.version = 1;
  }
  return p;
}

}  // namespace gpulse::identity
