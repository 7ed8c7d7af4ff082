#include "power/collector/collector.h"

#include <fmt/format.h>
#include <sched.h>
#include <sys/socket.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <span>
#include <thread>

#include "net/batch_send.h"
#include "net/http_client.h"
#include "power/collector/diagnostics.h"
#include "power/collector/parallel_for.h"
#include "power/collector/scrape_parse.h"
#include "power/readers/contract.h"

namespace gpulse::power {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxMissedRanges = 64;

double UnixNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Threads that write a cycle's requests, the loop thread included: one per CPU this process may
// run on, at most 4 (past that the receivers, not the writers, set the pace).
unsigned WriterThreads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  return static_cast<unsigned>(std::clamp(cpus, 1, 4));
}

void AddReason(std::vector<std::string>& list, std::string_view r) {
  if (std::find(list.begin(), list.end(), r) == list.end()) list.emplace_back(r);
}

Json OptJson(const std::optional<double>& v) { return v ? Json(*v) : Json(); }

struct EndpointScrape {
  bool started = false, settled = false;
  double start_unix = 0, end_unix = 0;
  Clock::time_point start_mono{};
  double request_s = 0;
  std::optional<double> parse_s, lag_s;
  std::optional<int> http_status;
  std::string error_type, error_message;
  std::vector<SampleRecord> rows;
  std::vector<std::string> reasons;
};

struct Cycle {
  int64_t seq = 0;
  std::optional<Clock::time_point> slot;
  std::optional<double> slot_unix;
  std::vector<EndpointScrape> eps;
  int outstanding = 0;
  bool done = false;
  bool final = false;
  uint64_t deadline_timer = 0;
};

}  // namespace

void LagHistogram::Add(double seconds) {
  if (buckets_.empty()) buckets_.assign(100'000, 0);
  double b = std::max(0.0, seconds) / kBucket;
  size_t i = std::min(buckets_.size() - 1, static_cast<size_t>(b));
  ++buckets_[i];
  ++count_;
  max_ = std::max(max_, seconds);
}

double LagHistogram::Percentile(double p) const {
  if (count_ == 0) return 0;
  auto need = static_cast<int64_t>(std::ceil(p * static_cast<double>(count_)));
  int64_t seen = 0;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= std::max<int64_t>(need, 1)) return std::min(max_, (i + 1) * kBucket);
  }
  return max_;
}

struct Collector::State {
  State(const CollectConfig& c, std::vector<ResolvedEndpoint> e, SamplesWriter s,
        std::unique_ptr<sys::Fd> diag)
      : config(c), endpoints(std::move(e)), samples(std::move(s)), diagnostics(std::move(diag)) {}

  const CollectConfig& config;
  std::vector<ResolvedEndpoint> endpoints;
  SamplesWriter samples;
  DiagnosticsWriter diagnostics;
  net::EventLoop loop;
  std::vector<std::unique_ptr<net::HttpTarget>> targets;
  std::vector<bool> ever_ok;
  std::unique_ptr<DiagnosticsWriter> notices;  // failure streaks, one line each (stderr)
  std::vector<int64_t> failed_scrapes;         // per endpoint: the current failure streak
  std::set<DeviceKey> expected;
  std::thread thread;
  // Writes a cycle's requests with the loop thread (WriteRequests); a thread writes at least
  // kWritesPerThread of them, so a few endpoints never wake a helper.
  static constexpr size_t kWritesPerThread = 32;
  ParallelFor writers{WriterThreads()};
  // One per writing thread (part k of a cycle's writes uses senders[k]); set up by WriteWith, or
  // by Start with io_uring.
  std::vector<std::unique_ptr<net::BatchSender>> senders;

  // Loop-thread state.
  std::deque<std::unique_ptr<Cycle>> pending;
  std::vector<EndpointScrape> spare_eps;  // Retire
  // What a slot's writes are prepared in, kept from cycle to cycle so that nothing is allocated
  // between a slot's timer and its first write: after a cycle's answers were freed, the first
  // large allocation made malloc consolidate its free lists, 2 ms at 4,096 endpoints.
  struct {
    std::vector<size_t> idle;
    std::vector<int> fds;
    std::vector<std::string_view> bytes;
    std::vector<ssize_t> written;
  } scratch;
  Clock::time_point t0{};
  double t0_unix = 0;
  std::size_t priming = 0;  // priming requests (Prime) still in flight
  int64_t next_slot = 0;
  int64_t next_seq = 0;
  uint64_t grid_timer = 0;
  bool stopping = false;
  bool final_started = false;
  Clock::time_point startup_deadline{};

  // Shared with the controlling thread.
  mutable std::mutex mu;
  std::condition_variable cv;
  CollectorSummary sum;

  std::chrono::milliseconds Timeout() const {
    return std::chrono::milliseconds(static_cast<int64_t>(config.request_timeout_s * 1000));
  }
  Clock::duration Interval() const {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(config.interval_s));
  }

  void Reason(std::string_view r) {
    std::lock_guard<std::mutex> lock(mu);
    AddReason(sum.reasons, r);
  }

  void NoteMissed(const std::string& host, int64_t seq, double slot_unix) {
    std::lock_guard<std::mutex> lock(mu);
    ++sum.missed_slots;
    AddReason(sum.reasons, reason::kSampleScheduleOverrun);
    for (auto it = sum.missed_ranges.rbegin(); it != sum.missed_ranges.rend(); ++it) {
      if (it->hostname != host) continue;
      if (it->last_seq + 1 == seq) {
        it->last_seq = seq;
        it->last_scheduled_unix = slot_unix;
        return;
      }
      break;
    }
    if (sum.missed_ranges.size() >= kMaxMissedRanges) {
      sum.missed_ranges_truncated = true;
      return;
    }
    sum.missed_ranges.push_back(
        {host, seq, seq, slot_unix, slot_unix, {std::string(reason::kSampleScheduleOverrun)}});
  }

  // One request to every endpoint before the first slot, its answer dropped: it opens the
  // connections and pays what a first exchange costs (send buffers that start small and grow, the
  // heap the bodies come from), so the first cycle runs like every other one. At 4,096 endpoints
  // the first exchange took about 1.1 s, which made the next cycle start late (bench/RESULTS.md,
  // issue 14). Each is bounded by the request timeout; one that fails is not recorded: the first
  // cycle's request reports the endpoint.
  void Prime() {
    priming = targets.size();
    if (priming == 0) return BeginGrid();
    for (auto& t : targets) {
      t->Get(Timeout(), [this](const net::FetchResult&) {
        if (--priming == 0) BeginGrid();
      });
    }
  }

  void BeginGrid() {
    if (stopping) return MaybeFinish();
    t0 = Clock::now();
    t0_unix = UnixNow();
    OnSlot(t0);
  }

  void ScheduleSlot() {
    Clock::time_point when = t0 + next_slot * Interval();
    grid_timer = loop.At(when, [this, when] { OnSlot(when); });
  }

  void OnSlot(Clock::time_point slot) {
    if (stopping) return;
    double slot_unix = t0_unix + Seconds(slot - t0);
    ++next_slot;
    // A late wake-up (the loop was busy longer than an interval) skips slots, never bursts.
    while (t0 + next_slot * Interval() <= Clock::now()) ++next_slot;
    ScheduleSlot();
    StartCycle(slot, slot_unix, false);
  }

  void StartCycle(std::optional<Clock::time_point> slot, std::optional<double> slot_unix,
                  bool final) {
    auto cycle = std::make_unique<Cycle>();
    Cycle* c = cycle.get();
    c->seq = next_seq++;
    c->slot = slot;
    c->slot_unix = slot_unix;
    c->final = final;
    c->eps = std::move(spare_eps);  // empty, with the room of an earlier cycle's
    spare_eps = {};
    c->eps.resize(endpoints.size());
    {
      std::lock_guard<std::mutex> lock(mu);
      sum.scrape_count = next_seq;
    }
    pending.push_back(std::move(cycle));
    // Held until every request is started: a request that fails at once (no descriptor left for
    // its socket) answers inside Get, and its cycle must not settle and be freed under this loop.
    ++c->outstanding;
    std::vector<size_t>& idle = scratch.idle;  // kept-alive connections
    std::vector<size_t> others;                // the rest (none, once connections are open)
    idle.clear();
    for (size_t e = 0; e < endpoints.size(); ++e) {
      if (targets[e]->busy()) {
        NoteMissed(endpoints[e].config.hostname, c->seq, slot_unix.value_or(UnixNow()));
        continue;
      }
      (targets[e]->IdleSocket() >= 0 ? idle : others).push_back(e);
    }
    WriteRequests(c, idle);
    for (size_t e : others) StartRequest(c, e);
    --c->outstanding;
    auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                       std::chrono::duration<double>(config.cycle_deadline_s()));
    c->deadline_timer = loop.At(deadline, [this, c] { OnDeadline(c); });
    if (c->outstanding == 0) Settle(c);
  }

  // The requests of every endpoint whose connection is kept alive and idle, written straight to
  // their sockets at once by the loop thread and the writer threads, 16 at a time taken by
  // whichever thread is free, each through its BatchSender (io_uring, one call per 16, where the
  // kernel allows it; a request's start is stamped just before the call that carries it), then
  // handed back to their targets to await the answers. At 4,096 endpoints one thread took about
  // 50 ms to write a cycle's requests on loopback with one send(2) each, where a write also runs
  // the receiver's TCP path (bench/RESULTS.md, issue 14). A write that fails or is cut short goes
  // the ordinary way: on the connection, or on a fresh one.
  void WriteRequests(Cycle* c, const std::vector<size_t>& idle) {
    std::vector<int>& fds = scratch.fds;
    std::vector<std::string_view>& bytes = scratch.bytes;
    std::vector<ssize_t>& written = scratch.written;
    fds.resize(idle.size());
    bytes.resize(idle.size());
    written.resize(idle.size());
    for (size_t k = 0; k < idle.size(); ++k) {
      fds[k] = targets[idle[k]]->IdleSocket();
      bytes[k] = targets[idle[k]]->RequestBytes();
    }
    // Chunks of one io_uring call each, taken by whichever writing thread is free first.
    auto write = [&](size_t worker, size_t begin, size_t end) {
      auto stamp = [&](size_t k) {
        EndpointScrape& s = c->eps[idle[begin + k]];
        s.start_mono = Clock::now();
        s.start_unix = UnixNow();
      };
      const size_t n = end - begin;
      senders[worker]->Send(std::span(fds).subspan(begin, n), std::span(bytes).subspan(begin, n),
                            std::span(written).subspan(begin, n), stamp);
    };
    writers.RunChunks(idle.size(), net::BatchSender::kChunk, kWritesPerThread, write);
    for (size_t k = 0; k < idle.size(); ++k) {
      size_t e = idle[k];
      if (written[k] != static_cast<ssize_t>(bytes[k].size())) {
        // Part of a request, or perhaps all of it, is on the wire: the connection is not reused.
        if (written[k] > 0 || written[k] == net::BatchSender::kUnknown)
          targets[e]->DropConnection();
        StartRequest(c, e);
        continue;
      }
      Started(c, e);
      targets[e]->GetWritten(c->eps[e].start_mono, Timeout(), Done(c, e));
    }
  }

  void StartRequest(Cycle* c, size_t e) {
    EndpointScrape& s = c->eps[e];
    s.start_mono = Clock::now();
    s.start_unix = UnixNow();
    Started(c, e);
    targets[e]->Get(Timeout(), Done(c, e));
  }

  // Bookkeeping of a request whose start is stamped in c->eps[e].
  void Started(Cycle* c, size_t e) {
    EndpointScrape& s = c->eps[e];
    s.started = true;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!sum.first_request_unix || s.start_unix < *sum.first_request_unix)
        sum.first_request_unix = s.start_unix;
      if (c->slot) {
        s.lag_s = Seconds(s.start_mono - *c->slot);
        sum.schedule_lag.Add(*s.lag_s);
        if (c->seq > 0) sum.steady_schedule_lag.Add(*s.lag_s);
      }
    }
    ++c->outstanding;
  }

  std::function<void(net::FetchResult)> Done(Cycle* c, size_t e) {
    return [this, c, e](net::FetchResult r) { OnResponse(c, e, std::move(r)); };
  }

  void OnResponse(Cycle* c, size_t e, net::FetchResult r) {
    EndpointScrape& s = c->eps[e];
    if (s.settled || c->done || r.error_type == "Cancelled") return;
    s.settled = true;
    s.end_unix = UnixNow();
    s.request_s = Seconds(Clock::now() - s.start_mono);
    s.http_status = r.http_status;
    s.error_type = r.error_type;
    s.error_message = r.error_message;
    {
      std::lock_guard<std::mutex> lock(mu);
      sum.last_settle_unix = s.end_unix;
      sum.max_scrape_duration_s = std::max(sum.max_scrape_duration_s.value_or(0), s.request_s);
    }
    const std::string& host = endpoints[e].config.hostname;
    if (r.ok()) {
      ever_ok[e] = true;
      auto p0 = Clock::now();
      ScrapeParse parsed = ParsePowerScrape(r.body);
      s.parse_s = Seconds(Clock::now() - p0);
      s.reasons = parsed.reasons;
      if (parsed.gpus.empty() && s.reasons.empty())
        AddReason(s.reasons, reason::kEndpointParseError);
      double t = (s.start_unix + s.end_unix) / 2;
      for (auto& g : parsed.gpus)
        s.rows.push_back({t, c->seq, host, g.gpu_index, std::move(g.uuid), g.power_w});
    } else if (r.error_type == "Timeout") {
      s.reasons.emplace_back(reason::kEndpointTimeout);
    } else {
      s.reasons.emplace_back(reason::kEndpointHttpError);
      // No listener where an exporter answered before: its process is gone.
      if (r.error_type == "ConnectionRefused" && ever_ok[e])
        s.reasons.emplace_back(reason::kExporterExited);
    }
    for (const auto& why : s.reasons) Reason(why);
    if (--c->outstanding == 0) Settle(c);
  }

  void OnDeadline(Cycle* c) {
    if (c->done) return;
    for (size_t e = 0; e < c->eps.size(); ++e) {
      EndpointScrape& s = c->eps[e];
      if (!s.started || s.settled) continue;
      s.settled = true;  // abandoned: no timing record, no rows
      s.reasons = {std::string(reason::kEndpointTimeout)};
      s.error_type = "CycleDeadline";
      Reason(reason::kEndpointTimeout);
      targets[e]->Cancel();
    }
    c->outstanding = 0;
    Settle(c);
  }

  void Settle(Cycle* c) {
    c->done = true;
    loop.Cancel(c->deadline_timer);
    while (!pending.empty() && pending.front()->done) {
      Commit(*pending.front());
      Retire(std::move(pending.front()->eps));
      pending.pop_front();
    }
    MaybeFinish();
  }

  // A committed cycle's per-endpoint records, emptied here (off the slot's path) and kept for the
  // next cycle: allocating them afresh at every slot (0.8 MB at 4,096 endpoints, new pages each
  // time) delayed the first request by 2-3 ms (bench/RESULTS.md, issue 14).
  void Retire(std::vector<EndpointScrape> eps) {
    eps.clear();
    if (eps.capacity() > spare_eps.capacity()) spare_eps = std::move(eps);
  }

  void Commit(const Cycle& c) {
    std::vector<SampleRecord> rows;
    std::set<DeviceKey> covered;
    for (size_t e = 0; e < c.eps.size(); ++e) {
      const EndpointScrape& s = c.eps[e];
      for (const auto& r : s.rows) {
        rows.push_back(r);
        covered.insert({r.hostname, r.gpu_index});
      }
      if (s.started && s.error_type != "CycleDeadline") PushScrapeRecord(c, e, s);
      if (s.started) NoteStreak(c, e, s);
    }
    auto w0 = Clock::now();
    Status st = samples.Append(rows);
    double write_s = Seconds(Clock::now() - w0);
    std::optional<std::string> error;
    if (!st.ok()) {
      error = st.error().message.substr(0, st.error().message.find(':'));
      std::lock_guard<std::mutex> lock(mu);
      if (!sum.sample_write_error) sum.sample_write_error = st.error().message;
      AddReason(sum.reasons, reason::kCollectorException);
    }
    diagnostics.PushIfRoom([&]() -> Json {
      return {{"event", "cycle_write"},
              {"scrape_seq", c.seq},
              {"scheduled_at_unix", OptJson(c.slot_unix)},
              {"writer_lock_wait_seconds", 0.0},
              {"sample_write_seconds", write_s},
              {"row_count", rows.size()},
              {"sample_write_completed", st.ok()},
              {"sample_write_error", error ? Json(*error) : Json()}};
    });
    std::lock_guard<std::mutex> lock(mu);
    if (st.ok()) sum.rows_written += static_cast<int64_t>(rows.size());
    bool complete =
        st.ok() && std::includes(covered.begin(), covered.end(), expected.begin(), expected.end());
    if (complete && !sum.ready && Clock::now() <= startup_deadline) {
      sum.ready = true;
      cv.notify_all();
    }
    if (c.final) {
      sum.finished = true;
      cv.notify_all();
    }
  }

  // One line when an endpoint starts failing (host, address, reasons, HTTP status or error) and one
  // when it answers again: an operator sees which exporter is down without reading
  // scrape-timings.jsonl, and a long outage is not one line per slot.
  void NoteStreak(const Cycle& c, size_t e, const EndpointScrape& s) {
    if (!notices) return;
    const EndpointConfig& ep = endpoints[e].config;
    int64_t& streak = failed_scrapes[e];
    if (s.reasons.empty()) {
      if (streak > 0)
        notices->PushText(fmt::format(
            "gpulse collect: endpoint {} answering again at scrape {} after {} failed scrape(s)\n",
            ep.hostname, c.seq, streak));
      streak = 0;
      return;
    }
    if (streak++ > 0) return;
    std::string why;
    for (const auto& r : s.reasons) why += (why.empty() ? "" : ",") + r;
    std::string detail = s.http_status ? fmt::format("HTTP {}", *s.http_status) : "";
    if (!s.error_type.empty() && s.error_type != "HTTPError")
      detail += (detail.empty() ? "" : ", ") + s.error_type +
                (s.error_message.empty() ? "" : ": " + s.error_message);
    notices->PushText(fmt::format(
        "gpulse collect: endpoint {} ({}:{}{}) failing from scrape {}: {}{}\n", ep.hostname,
        endpoints[e].ip, ep.port, ep.path, c.seq, why, detail.empty() ? "" : " (" + detail + ")"));
  }

  void PushScrapeRecord(const Cycle& c, size_t e, const EndpointScrape& s) {
    bool ok = s.error_type.empty();
    diagnostics.PushIfRoom([&]() -> Json {
      return {{"event", "scrape"},
              {"schema_version", kSchemaVersion},
              {"job_id", config.job_id},
              {"run_name", config.run_name},
              {"hostname", endpoints[e].config.hostname},
              {"scrape_seq", c.seq},
              {"request_started_at_unix", s.start_unix},
              {"request_finished_at_unix", s.end_unix},
              {"request_duration_seconds", s.request_s},
              {"parse_seconds", OptJson(s.parse_s)},
              {"sample_timestamp_unix", ok ? Json((s.start_unix + s.end_unix) / 2) : Json()},
              {"http_status", s.http_status ? Json(*s.http_status) : Json()},
              {"error_type", ok ? Json() : Json(s.error_type)},
              {"row_count", s.rows.size()},
              {"reason_codes", s.reasons},
              {"schedule_lag_seconds", OptJson(s.lag_s)}};
    });
  }

  void MaybeFinish() {
    if (!stopping || !pending.empty() || final_started || priming > 0) return;
    final_started = true;
    StartCycle(std::nullopt, std::nullopt, true);
  }
};

Collector::Collector(const CollectConfig& config, std::vector<ResolvedEndpoint> endpoints,
                     SamplesWriter samples, std::unique_ptr<sys::Fd> diagnostics)
    : state_(std::make_unique<State>(config, std::move(endpoints), std::move(samples),
                                     std::move(diagnostics))) {
  State& s = *state_;
  for (const auto& ep : s.endpoints)
    s.targets.push_back(
        std::make_unique<net::HttpTarget>(s.loop, ep.ip, ep.config.port, ep.config.path));
  s.ever_ok.assign(s.endpoints.size(), false);
  s.failed_scrapes.assign(s.endpoints.size(), 0);
  for (const auto& d : config.topology.devices) s.expected.insert(d.key);
}

std::string Collector::WriteWith(bool io_uring) {
  State& s = *state_;
  s.senders.clear();
  for (unsigned k = 0; k < s.writers.threads(); ++k)
    s.senders.push_back(std::make_unique<net::BatchSender>(io_uring));
  return s.senders.front()->fallback_reason();
}

Collector::~Collector() {
  if (!state_) return;  // abandoned after a join timeout
  State& s = *state_;
  if (s.thread.joinable()) {
    s.loop.Stop();
    s.thread.join();
  }
}

void Collector::Start() {
  State& s = *state_;
  if (s.senders.empty()) WriteWith(true);
  s.startup_deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(s.config.startup_timeout_s));
  s.loop.Post([&s] { s.Prime(); });
  s.thread = std::thread([&s] { s.loop.Run(); });
}

bool Collector::WaitReady(Clock::time_point deadline) {
  State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait_until(lock, deadline, [&] { return s.sum.ready; });
  return s.sum.ready;
}

bool Collector::Stop(Clock::time_point deadline) {
  State& s = state();
  s.loop.Post([&s] {
    s.stopping = true;
    s.loop.Cancel(s.grid_timer);
    s.MaybeFinish();
  });
  bool finished;
  {
    std::unique_lock<std::mutex> lock(s.mu);
    finished = s.cv.wait_until(lock, deadline, [&] { return s.sum.finished; });
  }
  s.loop.Stop();
  if (!finished) {
    s.Reason(reason::kCollectorJoinTimeout);
    // The loop thread is stuck in a handler: abandon it with the state it uses.
    s.thread.detach();
    (void)state_.release();
    abandoned_ = &s;
    return false;
  }
  if (s.thread.joinable()) s.thread.join();
  joined_ = true;
  return true;
}

void Collector::ReportFailuresTo(std::unique_ptr<sys::Fd> sink) {
  state().notices = std::make_unique<DiagnosticsWriter>(std::move(sink), 64, /*summary=*/false);
}

Status Collector::CloseFiles(Clock::time_point deadline) {
  State& s = state();
  s.diagnostics.Close(deadline);
  if (s.notices) s.notices->Close(deadline);
  if (!joined_) return Status::Ok();
  return s.samples.Close();
}

void Collector::InjectLoopStall(std::chrono::milliseconds d) {
  state().loop.Post([d] { std::this_thread::sleep_for(d); });
}

void Collector::InjectDiagnosticsStall() { state().diagnostics.InjectStall(); }

CollectorSummary Collector::summary() const {
  std::lock_guard<std::mutex> lock(state().mu);
  return state().sum;
}

}  // namespace gpulse::power
