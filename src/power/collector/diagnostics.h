// The best-effort scrape-timings.jsonl sidecar: one daemon thread owns all of its file I/O (the
// caller creates the file, so a refused one is the caller's error before anything starts), fed
// through a queue of at most `max_pending` records. Push never blocks and never fails the caller:
// when the queue is full the record is dropped and counted. Close() appends the closing
// diagnostic_summary (with dropped_records) and waits for the writer only until a deadline; a
// writer stuck in I/O is then abandoned (it owns its state) so shutdown is never held up.
// Thread-safe: Push and Close from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "power/readers/json_io.h"
#include "sys/fd.h"

namespace gpulse::power {

class DiagnosticsWriter {
 public:
  // `file`: open for writing (O_APPEND or at offset 0); the writer closes it. REQUIRES: file.
  // Without `summary`, Close() appends nothing (a plain text sink, such as stderr).
  explicit DiagnosticsWriter(std::unique_ptr<sys::Fd> file, size_t max_pending = 128,
                             bool summary = true);
  ~DiagnosticsWriter();
  DiagnosticsWriter(const DiagnosticsWriter&) = delete;
  DiagnosticsWriter& operator=(const DiagnosticsWriter&) = delete;

  void Push(Json record);
  // Queues one line of text as it is (with its '\n'), under the same bound.
  void PushText(std::string line);
  // Builds the record only when the queue has room (else counts it dropped): a full queue costs
  // the caller no JSON work.
  void PushIfRoom(const std::function<Json()>& make);
  // Returns true when the summary was written before the deadline. Idempotent.
  bool Close(std::chrono::steady_clock::time_point deadline);
  uint64_t dropped() const;
  // Fault injection for tests (GPULSE_COLLECT_TEST_FAULT=stall_diagnostics): the writer thread
  // blocks before its next write until process exit, as one stuck in a hung file system would.
  void InjectStall();

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

}  // namespace gpulse::power
