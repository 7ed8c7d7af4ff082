#include "exporter/live_hub.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/clock.h"
#include "core/fields.h"
#include "prom/writer.h"

namespace gpulse::exporter {
namespace {

constexpr std::int64_t kNsPerMs = 1'000'000;

bool HasLiveFields(const Snapshot& s) {
  auto live = LiveFields();
  return live.empty() ||
         std::find(s.fields.begin(), s.fields.end(), live.front()) != s.fields.end();
}

}  // namespace

std::string LiveHub::SseEvent(std::uint64_t seq, const std::string& json_line) {
  std::string out;
  out.reserve(json_line.size() + 40);
  out += "id: ";
  out += std::to_string(seq);
  out += "\nevent: frame\ndata: ";
  out += json_line;
  out += "\n\n";
  return out;
}

LiveHub::LiveHub(LiveHubOptions options, const SystemInfo& info, std::vector<Entity> entities,
                 std::optional<sys::RootedFs> proc, ReadFn read)
    : options_(std::move(options)),
      read_(std::move(read)),
      builder_(info, std::move(entities), std::move(proc), options_.history_points) {
  thread_ = std::thread([this] { Loop(); });
}

void LiveHub::Stop() {
  std::vector<std::shared_ptr<net::EventStream>> streams;
  std::vector<FrameFn> waiting;
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  {
    std::lock_guard lock(mu_);
    for (const auto& st : streams_) dropped_closed_ += st->dropped();
    streams.swap(streams_);
    waiting.swap(waiting_);
  }
  for (auto& st : streams) st->Close();
  for (auto& w : waiting) w(nullptr);
}

LiveHub::~LiveHub() { Stop(); }

Result<std::shared_ptr<net::EventStream>> LiveHub::Subscribe() {
  std::lock_guard lock(mu_);
  if (stop_) return Unavailable("the server is shutting down");
  // Viewers that went away since the last frame no longer count against the limit.
  std::erase_if(streams_, [this](const auto& s) {
    if (!s->closed()) return false;
    dropped_closed_ += s->dropped();
    return true;
  });
  if (streams_.size() >= options_.max_viewers) {
    ++stats_.refused;
    return Unavailable(fmt::format(
        "viewer limit reached: {} live viewers are connected (--max-viewers); close one or retry",
        options_.max_viewers));
  }
  auto stream = std::make_shared<net::EventStream>(options_.queue_frames);
  const bool fresh =
      latest_sse_ && MonotonicNowNs() - latest_mono_ns_ < options_.interval_ms * kNsPerMs;
  // A frame older than an interval is not news: the read started now brings the first one.
  if (fresh) stream->Push(latest_sse_);
  if (!fresh && !reading_) next_due_ns_ = 0;
  streams_.push_back(stream);
  ++stats_.viewers_total;
  cv_.notify_all();
  return stream;
}

void LiveHub::FrameNow(FrameFn done) {
  std::unique_lock lock(mu_);
  if (latest_json_ && MonotonicNowNs() - latest_mono_ns_ < options_.interval_ms * kNsPerMs) {
    auto frame = latest_json_;
    lock.unlock();
    return done(std::move(frame));
  }
  if (stop_) {
    lock.unlock();
    return done(nullptr);
  }
  waiting_.push_back(std::move(done));
  if (!reading_) next_due_ns_ = 0;
  cv_.notify_all();
}

bool LiveHub::active() const {
  std::lock_guard lock(mu_);
  if (stop_) return false;
  if (!waiting_.empty()) return true;
  for (const auto& st : streams_)
    if (!st->closed()) return true;
  return false;
}

LiveHubStats LiveHub::stats() const {
  std::lock_guard lock(mu_);
  LiveHubStats s = stats_;
  s.viewers = 0;
  s.dropped = dropped_closed_;
  for (const auto& st : streams_) {
    s.dropped += st->dropped();
    if (!st->closed()) ++s.viewers;
  }
  return s;
}

std::string LiveHub::Exposition() const {
  LiveHubStats s = stats();
  std::string out;
  auto family = [&out](SelfMetric m, std::uint64_t value) {
    const SelfMetricSpec& spec = SelfMetricAt(m);
    prom::AppendFamilyHeader(out, spec.name, spec.help, spec.prom_type);
    out += fmt::format("{} {}\n", spec.name, value);
  };
  family(SelfMetric::kLiveViewers, s.viewers);
  family(SelfMetric::kLiveFrames, s.frames);
  family(SelfMetric::kLiveDroppedFrames, s.dropped);
  family(SelfMetric::kLiveViewersRefused, s.refused);
  return out;
}

void LiveHub::Loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    // Viewers that left are forgotten before a read, so the last one leaving stops the reads.
    std::erase_if(streams_, [this](const auto& st) {
      if (!st->closed()) return false;
      dropped_closed_ += st->dropped();
      return true;
    });
    cv_.wait(lock, [this] { return stop_ || !streams_.empty() || !waiting_.empty(); });
    if (stop_) return;
    const std::int64_t now = MonotonicNowNs();
    if (next_due_ns_ > now) {
      cv_.wait_for(lock, std::chrono::nanoseconds(next_due_ns_ - now));
      continue;  // woken early (a new viewer, a frame asked for, stop) or due: check again
    }
    reading_ = true;
    lock.unlock();
    try {
      Tick();
    } catch (const std::exception& e) {  // a bug: the views stop updating, the server goes on
      fmt::print(stderr, "gpulse: live views: internal error: {}\n", e.what());
    }
    lock.lock();
    reading_ = false;
    // Late ticks are skipped, never made up: the next one is a whole interval from this one's
    // start, and a viewer arriving meanwhile did not start another read.
    next_due_ns_ = now + options_.interval_ms * kNsPerMs;
  }
}

// A read that began before the first viewer came (a scrape's) lacks the live fields; the reader
// hands it out again until its refresh has passed, so wait that long and read again.
std::shared_ptr<const Snapshot> LiveHub::ReadWithLiveFields() {
  std::shared_ptr<const Snapshot> snap = read_();
  for (int tries = 0; snap && !HasLiveFields(*snap) && tries < 3; ++tries) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, std::chrono::milliseconds(options_.min_refresh_ms + 1),
                       [this] { return stop_; }))
        return nullptr;
    }
    snap = read_();
  }
  return snap && HasLiveFields(*snap) ? snap : nullptr;
}

void LiveHub::Tick() {
  std::shared_ptr<const Snapshot> snap = ReadWithLiveFields();
  std::shared_ptr<const std::string> sse, json_line;
  std::size_t viewers = 0;
  std::uint64_t dropped = 0;
  {
    std::lock_guard lock(mu_);
    viewers = streams_.size();
    dropped = dropped_closed_;
    for (const auto& s : streams_) dropped += s->dropped();
  }
  if (snap && snap != last_snap_) {
    last_snap_ = snap;
    FrameContext c{options_.source, options_.hostname, options_.interval_ms / 1000.0, viewers,
                   dropped};
    // Process names are the processes' own (prctl): invalid UTF-8 is replaced, never thrown on.
    auto line = std::make_shared<const std::string>(
        builder_.Build(*snap, c).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    sse = std::make_shared<const std::string>(SseEvent(builder_.seq(), *line));
    json_line = std::move(line);
  }
  std::vector<FrameFn> waiting;
  {
    std::lock_guard lock(mu_);
    if (sse) {
      latest_sse_ = sse;
      latest_json_ = json_line;
      latest_mono_ns_ = MonotonicNowNs();
      ++stats_.frames;
      std::erase_if(streams_, [this, &sse](const auto& s) {
        if (s->Push(sse)) return false;
        dropped_closed_ += s->dropped();
        return true;
      });
    }
    waiting.swap(waiting_);
    json_line = latest_json_;
  }
  for (FrameFn& w : waiting) w(json_line);
}

}  // namespace gpulse::exporter
