#include "gpu/composite_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "core/clock.h"

namespace gpulse::gpu {
namespace {

// One thread that makes a member backend's calls, one at a time. The caller hands it a job and
// waits up to a deadline; a job still running after that leaves the worker busy (the member is
// stalled) until it returns. Jobs own what they write (shared state), so an abandoned job never
// writes into its caller's stack.
class Worker {
 public:
  Worker() : thread_([this] { Loop(); }) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Stops the thread. REQUIRES: no job is running (a worker stuck in a job is never destroyed:
  // see ~CompositeBackend).
  ~Worker() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  bool Busy() {
    std::lock_guard lock(mu_);
    return busy_;
  }

  // Runs `job` on the worker and waits up to `deadline`: true when it finished in time. False
  // at once when an earlier job is still running.
  bool Run(std::function<void()> job, std::chrono::milliseconds deadline) {
    std::unique_lock lock(mu_);
    if (busy_) return false;
    job_ = std::move(job);
    busy_ = true;
    cv_.notify_all();
    return done_cv_.wait_for(lock, deadline, [this] { return !busy_; });
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [this] { return stop_ || job_; });
      if (!job_) return;  // stopping, nothing to run
      auto job = std::move(job_);
      job_ = nullptr;
      lock.unlock();
      job();
      lock.lock();
      busy_ = false;
      done_cv_.notify_all();
      if (stop_) return;
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::function<void()> job_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

struct Member {
  std::string name;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Worker> worker = std::make_unique<Worker>();
  std::optional<std::string> failed;  // threw: read no more
  bool stall_reported = false;
  ReadStats stats;  // the member's counters after its last finished call
};

// Where a merged device lives: which member, and its position there.
struct Slot {
  std::size_t member = 0;
  std::size_t pos = 0;
};

// (domain, bus, device, function) of "00000000:C1:00.0" or "0000:c1:00.0"; nullopt otherwise.
std::optional<std::tuple<unsigned long, unsigned long, unsigned long, unsigned long>> PciKey(
    const std::string& id) {
  unsigned long domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (std::sscanf(id.c_str(), "%lx:%lx:%lx.%lx%c", &domain, &bus, &dev, &fn, &tail) != 4) {
    return std::nullopt;
  }
  return std::tuple{domain, bus, dev, fn};
}

// Orders by PCI address; devices without one after those with one, in member order.
struct PciOrder {
  bool operator()(const std::pair<std::string, std::size_t>& a,
                  const std::pair<std::string, std::size_t>& b) const {
    auto ka = PciKey(a.first), kb = PciKey(b.first);
    if (ka && kb) return *ka < *kb;
    if (ka.has_value() != kb.has_value()) return ka.has_value();
    return a.second < b.second;
  }
};

// A sample of `fields` with nothing read: the member could not be asked.
void AbsentSample(Sample& out) {
  out.values.assign(AllFields().size(), std::nullopt);
  out.unsupported.assign(AllFields().size(), false);
  out.xid_events.clear();
  out.xid_counts.clear();
  out.state = DeviceState::kOk;
  out.profiling_stuck = false;
  out.t_mono_ns = MonotonicNowNs();
  out.t_unix_ns = UnixNowNs();
}

class CompositeBackend final : public Backend {
 public:
  CompositeBackend(std::vector<NamedBackend> members, std::chrono::milliseconds deadline,
                   std::vector<std::string> open_errors)
      : deadline_(deadline) {
    info_.backend_errors = std::move(open_errors);
    for (auto& m : members) {
      Member member;
      member.name = std::move(m.name);
      member.backend = std::move(m.backend);
      members_.push_back(std::move(member));
      members_.back().stats = members_.back().backend->stats();
    }
    Merge();
    SumStats();
  }

  ~CompositeBackend() override {
    for (Member& m : members_) {
      if (m.worker->Busy()) {
        // A call that never returned still uses the backend and its worker: both are left to
        // the process's exit rather than destroyed under it.
        (void)m.worker.release();
        (void)m.backend.release();
      }
    }
  }

  const SystemInfo& info() const override { return info_; }
  const ReadStats& stats() const override { return stats_; }
  std::vector<BackendFailure> failures() const { return failures_; }

  void Read(std::size_t pos, std::span<const FieldIndex> fields, Sample& out) override {
    const Slot slot = devices_.at(pos);
    std::vector<FieldIndex> wanted(fields.begin(), fields.end());
    auto sample = Call<Sample>(slot.member, names_[pos], [=](Backend& b) {
      Sample s;
      b.Read(slot.pos, wanted, s);
      return s;
    });
    if (sample) {
      out = std::move(*sample);
    } else {
      AbsentSample(out);
    }
  }

  void ReadInstance(std::size_t pos, std::size_t mig_pos, std::span<const FieldIndex> fields,
                    Sample& out) override {
    const Slot slot = devices_.at(pos);
    std::vector<FieldIndex> wanted(fields.begin(), fields.end());
    auto sample = Call<Sample>(slot.member, names_[pos], [=](Backend& b) {
      Sample s;
      b.ReadInstance(slot.pos, mig_pos, wanted, s);
      return s;
    });
    if (sample) {
      out = std::move(*sample);
    } else {
      AbsentSample(out);
    }
  }

  ProcessList Processes(std::size_t pos) override {
    const Slot slot = devices_.at(pos);
    auto list = Call<ProcessList>(slot.member, names_[pos],
                                  [=](Backend& b) { return b.Processes(slot.pos); });
    if (list) return std::move(*list);
    ProcessList none;
    none.t_mono_ns = MonotonicNowNs();
    none.error = Unanswered(slot.member);
    return none;
  }

  void PrimeProfiling(std::span<const FieldIndex> fields) override {
    std::vector<FieldIndex> wanted(fields.begin(), fields.end());
    for (std::size_t m = 0; m < members_.size(); ++m) {
      (void)Call<bool>(m, "profiling", [=](Backend& b) {
        b.PrimeProfiling(wanted);
        return true;
      });
    }
  }

  void PrimeProcesses() override {  // each member waits its own prime: they run one after another
    for (std::size_t m = 0; m < members_.size(); ++m) {
      (void)Call<bool>(m, "processes", [](Backend& b) {
        b.PrimeProcesses();
        return true;
      });
    }
  }

  bool SetSimulatedClock(double seconds) override {
    bool any = false;
    for (std::size_t m = 0; m < members_.size(); ++m) {
      auto set = Call<bool>(m, "the simulated clock",
                            [=](Backend& b) { return b.SetSimulatedClock(seconds); });
      any = any || set.value_or(false);
    }
    return any;
  }

  DeviceSettings ReadSettings(std::size_t pos) override {
    const Slot slot = devices_.at(pos);
    auto s = Call<DeviceSettings>(slot.member, names_[pos],
                                  [=](Backend& b) { return b.ReadSettings(slot.pos); });
    return s.value_or(DeviceSettings{});
  }

  Status SetComputeMode(std::size_t pos, int mode) override {
    return Set(pos, [=](Backend& b, std::size_t p) { return b.SetComputeMode(p, mode); });
  }
  Status SetEccMode(std::size_t pos, bool enabled) override {
    return Set(pos, [=](Backend& b, std::size_t p) { return b.SetEccMode(p, enabled); });
  }
  Status SetApplicationClocks(std::size_t pos, unsigned mem_mhz, unsigned sm_mhz) override {
    return Set(
        pos, [=](Backend& b, std::size_t p) { return b.SetApplicationClocks(p, mem_mhz, sm_mhz); });
  }
  Status SetPowerLimit(std::size_t pos, double watts) override {
    return Set(pos, [=](Backend& b, std::size_t p) { return b.SetPowerLimit(p, watts); });
  }
  Status ResetGpu(std::size_t pos) override {
    return Set(pos, [=](Backend& b, std::size_t p) { return b.ResetGpu(p); });
  }
  Status InjectFault(std::size_t pos, std::string_view fault) override {
    // A copy: a call that misses its deadline still runs later, after `fault` is gone.
    return Set(pos, [text = std::string(fault)](Backend& b, std::size_t p) {
      return b.InjectFault(p, text);
    });
  }

 private:
  // Runs `fn` on member `m`'s worker. nullopt when the member has failed, is stalled, throws or
  // misses the deadline (each reported once).
  template <typename R>
  std::optional<R> Call(std::size_t m, const std::string& what, std::function<R(Backend&)> fn) {
    Member& member = members_[m];
    if (member.failed || member.worker->Busy()) {  // failed, or still stuck in an earlier call
      CountFailure();
      return std::nullopt;
    }
    if (member.stall_reported) Recovered(m);
    struct State {
      std::optional<R> result;
      std::optional<std::string> thrown;
      ReadStats stats;
    };
    auto state = std::make_shared<State>();
    Backend* backend = member.backend.get();
    const bool done = member.worker->Run(
        [state, backend, fn = std::move(fn)] {
          try {
            state->result = fn(*backend);
          } catch (const std::exception& e) {
            state->thrown = e.what();
          } catch (...) {
            state->thrown = "an unknown exception";
          }
          state->stats = backend->stats();
        },
        deadline_);
    if (!done) {
      CountFailure();
      Stalled(m, what);
      return std::nullopt;
    }
    if (state->thrown) {
      Failed(m, fmt::format("{} threw an exception ({}) while reading {}; its GPUs are not read any more",
                            member.name, *state->thrown, what));
      CountFailure();
      return std::nullopt;
    }
    member.stats = state->stats;
    SumStats();
    return std::move(state->result);
  }

  Status Set(std::size_t pos, std::function<Status(Backend&, std::size_t)> fn) {
    const Slot slot = devices_.at(pos);
    auto status =
        Call<Status>(slot.member, names_[pos], [=](Backend& b) { return fn(b, slot.pos); });
    if (status) return std::move(*status);
    return Unavailable(Unanswered(slot.member));
  }

  std::string Unanswered(std::size_t m) const {
    const Member& member = members_[m];
    if (member.failed) return *member.failed;
    return member.name + " did not answer in time (a GPU in reset or a hung driver?)";
  }


  void Stalled(std::size_t m, const std::string& what) {
    Member& member = members_[m];
    if (member.stall_reported) return;
    member.stall_reported = true;
    Report({member.name,
            fmt::format("{}: reading {} did not return within {} ms; its GPUs read as absent "
                        "until it does",
                        member.name, what, deadline_.count()),
            true});
  }

  void Recovered(std::size_t m) {
    Member& member = members_[m];
    member.stall_reported = false;
    for (BackendFailure& f : failures_) {
      if (f.backend == member.name) f.stalled = false;
    }
    fmt::print(stderr, "gpulse: {}: the stuck read returned; reading its GPUs again\n",
               member.name);
  }

  void Failed(std::size_t m, std::string reason) {
    members_[m].failed = reason;
    Report({members_[m].name, std::move(reason), false});
  }

  void Report(BackendFailure failure) {
    fmt::print(stderr, "gpulse: warning: {}\n", failure.reason);
    failures_.push_back(std::move(failure));
  }

  void CountFailure() {
    ++own_failed_calls_;
    SumStats();
  }

  void SumStats() {
    ReadStats sum;
    for (const Member& m : members_) {
      sum.failed_calls += m.stats.failed_calls;
      sum.unsupported_calls += m.stats.unsupported_calls;
      sum.profiling_failed_calls += m.stats.profiling_failed_calls;
      sum.profiling_rejected_values += m.stats.profiling_rejected_values;
    }
    sum.failed_calls += own_failed_calls_;
    stats_ = sum;
  }

  // One list over every member's devices and skipped devices, in PCI bus order, renumbered.
  void Merge() {
    std::vector<std::pair<std::string, std::size_t>> order;  // (pci id, entry)
    struct Entry {
      std::size_t member;
      std::optional<std::size_t> device;   // position in the member's devices
      std::optional<std::size_t> skipped;  // or in its skipped list
    };
    std::vector<Entry> entries;
    std::vector<std::string> names;
    for (std::size_t m = 0; m < members_.size(); ++m) {
      const SystemInfo& mi = members_[m].backend->info();
      names.push_back(mi.backend.empty() ? members_[m].name : mi.backend);
      for (std::size_t d = 0; d < mi.devices.size(); ++d) {
        order.emplace_back(mi.devices[d].pci_bus_id, entries.size());
        entries.push_back({m, d, std::nullopt});
      }
      for (std::size_t s = 0; s < mi.skipped.size(); ++s) {
        order.emplace_back(mi.skipped[s].pci_bus_id, entries.size());
        entries.push_back({m, std::nullopt, s});
      }
      if (!info_.driver_version) info_.driver_version = mi.driver_version;
      if (!info_.library_version) info_.library_version = mi.library_version;
      if (info_.library.empty()) info_.library = mi.library;
      info_.simulated = info_.simulated || mi.simulated;
      if (info_.scenario.empty()) info_.scenario = mi.scenario;
      info_.backend_errors.insert(info_.backend_errors.end(), mi.backend_errors.begin(),
                                  mi.backend_errors.end());
    }
    info_.backend = fmt::format("{}", fmt::join(names, "+"));
    // One member keeps its own order and numbers; several are merged in PCI bus order.
    const bool renumber = members_.size() > 1;
    if (renumber) std::stable_sort(order.begin(), order.end(), PciOrder{});
    unsigned number = 0;
    for (const auto& [pci, e] : order) {
      const Entry& entry = entries[e];
      const SystemInfo& mi = members_[entry.member].backend->info();
      if (entry.device) {
        DeviceInfo d = mi.devices[*entry.device];
        if (renumber) {
          if (!d.backend_index) d.backend_index = d.index;  // a sysfs GPU's is its DRM card
          d.index = number++;
        }
        if (d.backend.empty()) d.backend = members_[entry.member].name;
        devices_.push_back({entry.member, *entry.device});
        names_.push_back(fmt::format("GPU {} ({} {})", d.index, d.backend, d.pci_bus_id));
        info_.devices.push_back(std::move(d));
      } else {
        SkippedDevice s = mi.skipped[*entry.skipped];
        if (renumber) {
          s.backend_index = s.index;
          s.index = number++;
        }
        info_.skipped.push_back(std::move(s));
      }
    }
  }

  std::vector<Member> members_;
  std::chrono::milliseconds deadline_;
  SystemInfo info_;
  std::vector<Slot> devices_;  // parallel to info_.devices
  // Parallel too: how failure messages name each device, made once (not on every read).
  std::vector<std::string> names_;
  ReadStats stats_;
  std::uint64_t own_failed_calls_ = 0;
  std::vector<BackendFailure> failures_;
};

}  // namespace

std::unique_ptr<Backend> MakeCompositeBackend(std::vector<NamedBackend> members,
                                              std::chrono::milliseconds deadline,
                                              std::vector<std::string> open_errors) {
  return std::make_unique<CompositeBackend>(std::move(members), deadline, std::move(open_errors));
}

std::vector<BackendFailure> BackendFailures(const Backend& backend) {
  const auto* composite = dynamic_cast<const CompositeBackend*>(&backend);
  return composite ? composite->failures() : std::vector<BackendFailure>{};
}

}  // namespace gpulse::gpu
