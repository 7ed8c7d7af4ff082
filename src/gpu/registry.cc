#include "gpu/registry.h"

#include <fmt/format.h>

#include <array>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "gpu/amdgpu/amdgpu_backend.h"
#include "gpu/composite_backend.h"
#include "gpu/intel/intel_backend.h"
#include "gpu/nvml/nvml_backend.h"

namespace gpulse::gpu {
namespace {
constexpr std::array kBackends = {
    BackendEntry{"nvml", &nvml::OpenNvmlBackend},
    BackendEntry{"amdgpu", &amdgpu::OpenAmdgpuBackend},
    BackendEntry{"intel", &intel::OpenIntelBackend},
};

// Opens one entry on a thread of its own, waiting at most `deadline`: an exception becomes an
// error, and an open that does not return (discovery reads sysfs, and a read of a GPU in reset
// can block) becomes an error while the thread is left to finish, or not, on its own.
Result<std::unique_ptr<Backend>> OpenOne(const BackendEntry& entry, const BackendOptions& options,
                                         std::chrono::milliseconds deadline) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Result<std::unique_ptr<Backend>>> result;
  };
  auto state = std::make_shared<State>();
  std::thread([state, open = entry.open, name = std::string(entry.name), options] {
    Result<std::unique_ptr<Backend>> r = Error{ErrorCode::kInternal, ""};
    try {
      r = open(options);
    } catch (const std::exception& e) {
      r = Error{ErrorCode::kInternal, fmt::format("{} threw while opening: {}", name, e.what())};
    } catch (...) {
      r = Error{ErrorCode::kInternal, fmt::format("{} threw while opening", name)};
    }
    std::lock_guard lock(state->mu);
    state->result.emplace(std::move(r));
    state->cv.notify_all();
  }).detach();
  std::unique_lock lock(state->mu);
  if (!state->cv.wait_for(lock, deadline, [&] { return state->result.has_value(); })) {
    return Error{ErrorCode::kIo, fmt::format("{} did not finish opening within {} ms (a GPU in reset "
                                             "or a hung driver?)",
                                             entry.name, deadline.count())};
  }
  return std::move(*state->result);
}

bool IsConfigurationMistake(const Error& e) {
  return e.code == ErrorCode::kInvalidArgument || e.code == ErrorCode::kNotFound;
}

}  // namespace

std::span<const BackendEntry> Backends() { return kBackends; }

Result<std::unique_ptr<Backend>> OpenBackends(const BackendOptions& options,
                                              std::span<const BackendEntry> entries,
                                              std::chrono::milliseconds open_deadline) {
  std::vector<NamedBackend> found;
  std::vector<std::string> unavailable;
  std::vector<Error> failed;  // with the backend's name in front
  for (const BackendEntry& entry : entries) {
    auto backend = OpenOne(entry, options, open_deadline);
    if (backend.ok()) {
      found.push_back({entry.name, std::move(backend).value()});
    } else if (backend.error().code == ErrorCode::kUnavailable) {
      unavailable.push_back(backend.error().message);
    } else {
      failed.push_back(backend.error());
    }
  }
  // A configuration mistake is the user's to fix: never read past it.
  for (const Error& e : failed) {
    if (IsConfigurationMistake(e)) return e;
  }
  if (found.empty()) {
    if (!failed.empty()) return failed.front();
    return Unavailable(fmt::format("{}", fmt::join(unavailable, "; ")));
  }
  for (const Error& e : failed) {
    fmt::print(stderr, "gpulse: warning: a GPU backend failed to open, reading the others: {}\n",
               e.message);
  }
  if (found.size() == 1 && failed.empty()) return std::move(found.front().backend);
  std::vector<std::string> errors;
  for (const Error& e : failed) errors.push_back(e.message);
  return MakeCompositeBackend(std::move(found), kMemberCallDeadline, std::move(errors));
}

Result<std::unique_ptr<Backend>> OpenBackend(const BackendOptions& options) {
  BackendOptions o = options;
  if (o.procfs_root.empty()) {  // every backend reads per-process data from the same tree
    const char* env = std::getenv("GPULSE_PROCFS_ROOT");
    if (env != nullptr && *env != '\0') o.procfs_root = env;
  }
  return OpenBackends(o, kBackends);
}

}  // namespace gpulse::gpu
