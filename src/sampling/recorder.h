// The sampling loop of `gpulse record`: every tick, on one monotonic clock anchored to the unix
// clock once, read every device of the backend and the process tree of the workload, until the
// workload exits. Late ticks are skipped, never burst.
#pragma once

#include <atomic>
#include <span>
#include <string>
#include <vector>

#include "core/fields.h"
#include "gpu/backend.h"
#include "report/journal.h"
#include "report/run.h"
#include "sampling/process_tree.h"
#include "sys/child_process.h"

namespace gpulse::sampling {

// Catalogue fields a timeline sample always needs (the ADR-007 readings) and those it may carry.
std::vector<FieldIndex> RequiredTimelineFields();
std::vector<FieldIndex> OptionalTimelineFields();

struct RecordOptions {
  std::int64_t period_ns = 50'000'000;
  bool include_descendants = false;
  std::string proc_root = "/proc";
  std::vector<FieldIndex> optional_fields = OptionalTimelineFields();
  // How often the GPU process lists are read for job statistics (the driver's lists are costly).
  std::int64_t process_list_period_ns = 1'000'000'000;
};

// Converts one catalogue reading into a timeline sample with the readings it has (absent ones stay
// absent, never zero-filled); nullopt only when the device is lost.
std::optional<report::GpuSample> ToGpuSample(const Sample& s, std::uint32_t device_index,
                                             std::int64_t elapsed_ns);

// The per-instance readings of a GPU instance entity.
report::InstanceSample ToInstanceSample(const Sample& s, const Entity& e, std::int64_t elapsed_ns);

// Counts, for one GPU's reading, the timeline readings it lacks: unsupported or failed this tick.
// `had` keeps, per timeline column, whether the GPU has given the reading yet: a reading over the
// interval between two reads (FromTwoReads) is absent by nature until its first value and is not
// counted before it.
void NoteAbsences(const Sample& s, std::span<const FieldIndex> fields, std::uint32_t& had,
                  report::TimelineAbsence& a);

class Recorder {
 public:
  // `backend` may be null (no GPU). `child_exited` is raised by the caller's SIGCHLD handler; it
  // ends the wait between ticks at once.
  Recorder(RecordOptions options, gpu::Backend* backend, const std::atomic<bool>* child_exited)
      : options_(std::move(options)), backend_(backend), child_exited_(child_exited) {}

  // Samples until `child` exits, reaps it, and fills run.gpu_samples, run.instance_samples,
  // run.resource_samples, run.xid_events, run.gpu_processes, run.absences and the timing fields
  // of run.info, streaming each tick to `journal` when given (flushed once a second). The
  // entities sampled are run.entities, as the caller chose them (empty: none, e.g. a mask that
  // hides every GPU); a GPU found lost is marked lost there with the time, and from then on only
  // its XID events are read.
  sys::ExitStatus Record(sys::ChildProcess& child, report::Run& run,
                         report::JournalWriter* journal = nullptr);

 private:
  void SampleTree(std::int64_t elapsed_ns, ProcessTreeSampler& tree, bool final, report::Run& run);
  void SampleGpus(std::int64_t elapsed_ns, report::Run& run);
  void SampleProcesses(std::int64_t elapsed_ns, const ProcessTreeSampler& tree, report::Run& run);
  void DrainLostXids(const Entity& e, std::int64_t elapsed_ns, report::Run& run);
  static report::TimelineAbsence& AbsenceOf(report::Run& run, std::uint32_t device_index);
  static bool Visible(const report::Run& run, std::uint32_t gpu, const GpuProcess& p);

  RecordOptions options_;
  gpu::Backend* backend_;
  const std::atomic<bool>* child_exited_;
  std::vector<FieldIndex> fields_;
  Sample scratch_;
  std::int64_t t0_mono_ = 0;     // Record's start: samples are stamped relative to it
  std::vector<std::uint32_t> had_;  // per run.entities position: NoteAbsences' columns seen
  bool sample_process_ = true;
};

}  // namespace gpulse::sampling
