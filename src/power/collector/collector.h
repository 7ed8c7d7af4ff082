// The power collector: polls every exporter endpoint on one event loop, on a fixed slot grid of one
// steady clock, parses DCGM_FI_DEV_POWER_USAGE and appends each cycle's rows to samples.csv (one
// flush per cycle), with scrape-timings.jsonl diagnostics beside it. At a slot the requests on idle
// keep-alive connections are written by the loop thread and a few writer threads at once, through
// io_uring where the kernel allows it (ADR 0006's amendments); everything else happens on the loop
// thread.
//
// Cycle k is scheduled at t0 + k * interval. An endpoint whose previous request is still in flight
// at a slot is recorded as missed for that slot (sample_schedule_overrun), never doubled up. Each
// request has the request timeout; a cycle still unsettled at its deadline (2 * timeout + 1 s)
// records endpoint_timeout for the rest. Cycles are committed to samples.csv in scrape_seq order.
// Readiness: one committed cycle whose rows cover every expected (host, gpu) before the startup
// deadline. Stop() ends the grid, lets the cycles in flight settle, then runs one final
// bracketing cycle (no scheduled slot) so every window's end is bracketed.
//
// A loop thread that does not finish by the join deadline is abandoned (detached, its state leaked
// until process exit) so a stuck loop never holds up finalization.
//
// Thread-safety: Start, WaitReady, Stop and summary() from one controlling thread; everything else
// runs on the collector's own loop thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "power/collector/artifact_writer.h"
#include "power/collector/collect_config.h"
#include "sys/fd.h"

namespace gpulse::power {

struct ResolvedEndpoint {
  EndpointConfig config;
  std::string ip;  // numeric address to connect to
};

struct MissedRange {
  std::string hostname;
  int64_t first_seq = 0, last_seq = 0;
  double first_scheduled_unix = 0, last_scheduled_unix = 0;
  std::vector<std::string> reasons;
};

// Schedule lags in 0.1 ms buckets up to 10 s (beyond: the last bucket), with the exact maximum: a
// fixed 800 kB however long the run, instead of one double per request.
class LagHistogram {
 public:
  void Add(double seconds);
  int64_t count() const { return count_; }
  double max() const { return max_; }
  // The smallest bucket upper bound covering fraction `p` (0..1) of the lags; 0 when empty.
  double Percentile(double p) const;

 private:
  static constexpr double kBucket = 1e-4;
  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  double max_ = 0;
};

struct CollectorSummary {
  std::vector<std::string> reasons;  // runtime reasons, first seen first
  int64_t scrape_count = 0;          // cycles started (scrape_seq values used)
  int64_t rows_written = 0;
  int64_t missed_slots = 0;
  std::vector<MissedRange> missed_ranges;  // coalesced, at most 64
  bool missed_ranges_truncated = false;
  std::optional<double> max_scrape_duration_s;
  // Scheduled request start minus its slot: every cycle, and every cycle after the first (the
  // first opens every connection).
  LagHistogram schedule_lag, steady_schedule_lag;
  bool ready = false;
  bool finished = false;  // the final bracketing cycle was committed
  std::optional<std::string> sample_write_error;
  std::optional<double> first_request_unix, last_settle_unix;
};

class Collector {
 public:
  // `samples` is the open samples.csv (header written), `diagnostics` the new, empty
  // scrape-timings.jsonl, open for writing. The loop does not start before Start().
  Collector(const CollectConfig& config, std::vector<ResolvedEndpoint> endpoints,
            SamplesWriter samples, std::unique_ptr<sys::Fd> diagnostics);
  ~Collector();
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;

  // Failure streaks go to `sink` (stderr in gpulse collect) as they start and end, one line each,
  // from a writer thread with a bounded queue: a blocked sink never delays a scrape.
  // REQUIRES: before Start().
  void ReportFailuresTo(std::unique_ptr<sys::Fd> sink);
  // How a slot's requests are written: with io_uring, in chunks of one system call each (the
  // default where the kernel allows it), or with one send(2) each. Returns why io_uring is not
  // used when it was asked for and could not be set up (empty otherwise).
  // REQUIRES: before Start().
  std::string WriteWith(bool io_uring);
  void Start();
  // Waits until ready or `deadline`; true when a complete cycle was committed before it.
  bool WaitReady(std::chrono::steady_clock::time_point deadline);
  // Final bracketing cycle and join. false when it did not finish by `deadline` (join timeout).
  bool Stop(std::chrono::steady_clock::time_point deadline);
  // After Stop: closes samples.csv (fsync) and the diagnostics sidecar. After a join timeout the
  // loop thread still owns samples.csv: it is left to process exit (every committed cycle was
  // already flushed to the kernel).
  Status CloseFiles(std::chrono::steady_clock::time_point deadline);
  // Fault injection for tests (GPULSE_COLLECT_TEST_FAULT, docs/power-contract.md): blocks the loop
  // thread for `d` from the next handler on, as a stuck write or parse would.
  void InjectLoopStall(std::chrono::milliseconds d);
  // Fault injection (stall_diagnostics): the diagnostics writer blocks before its first write.
  // REQUIRES: before Start().
  void InjectDiagnosticsStall();
  CollectorSummary summary() const;

  struct State;

 private:
  State& state() const { return state_ ? *state_ : *abandoned_; }

  std::unique_ptr<State> state_;
  State* abandoned_ = nullptr;  // set when a stuck loop thread kept the state
  bool joined_ = false;
};

}  // namespace gpulse::power
