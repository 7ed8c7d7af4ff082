#include "cli/live_source.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "cli/agent_client.h"
#include "cli/gpu_options.h"
#include "cli/procfs_options.h"
#include "core/clock.h"
#include "exporter/live_frame.h"
#include "exporter/snapshot.h"
#include "faults/fault_backend.h"
#include "gpu/registry.h"

namespace gpulse::cli {
namespace {

constexpr std::size_t kMaxEventBytes = 64u << 20;

// Frames from a server's GET /api/v1/stream: server-sent events, one frame in each `data:` line.
class StreamSource final : public LiveSource {
 public:
  StreamSource(std::unique_ptr<AgentStream> stream, std::string host)
      : stream_(std::move(stream)), host_(std::move(host)) {}

  Result<std::optional<nlohmann::json>> Next(std::chrono::milliseconds timeout) override {
    const std::int64_t now = MonotonicNowNs();
    if (last_event_ns_ == 0) last_event_ns_ = now;
    // A server that hangs, or a connection that died without a word, sends nothing: after five
    // intervals (at least 15 s) without a frame the stream counts as broken, and `top` reconnects.
    const std::int64_t silence_ns = std::max<std::int64_t>(15'000'000'000, 5 * interval_ns_);
    if (now - last_event_ns_ > silence_ns) {
      return Unavailable("no frame from " + host_ + " for " +
                         std::to_string((now - last_event_ns_) / 1'000'000'000) + " s");
    }
    const std::int64_t deadline = now + timeout.count() * 1'000'000;
    for (;;) {
      if (auto frame = TakeEvent()) {
        last_event_ns_ = MonotonicNowNs();
        if (auto i = frame->find("interval_seconds"); i != frame->end() && i->is_number())
          interval_ns_ = static_cast<std::int64_t>(std::min(i->get<double>(), 3600.0) * 1e9);
        return frame;
      }
      if (buffer_.size() > kMaxEventBytes)
        return Unavailable("the stream from " + host_ + " sent an event over 64 MiB");
      const std::int64_t left = deadline - MonotonicNowNs();
      if (left <= 0) return std::optional<nlohmann::json>();
      auto got = stream_->Read(buffer_, std::chrono::milliseconds(left / 1'000'000 + 1));
      if (!got) return got.error();
      if (!*got) return std::optional<nlohmann::json>();
      std::erase(buffer_, '\r');  // event streams may end lines with CRLF
    }
  }

  std::string Describe() const override { return "via agent " + host_; }

 private:
  // The next whole event's frame, if the buffer holds one (events without data are skipped).
  std::optional<nlohmann::json> TakeEvent() {
    for (;;) {
      std::size_t end = buffer_.find("\n\n");
      if (end == std::string::npos) return std::nullopt;
      std::string event = buffer_.substr(0, end + 1);
      buffer_.erase(0, end + 2);
      std::string data;
      for (std::size_t at = 0; at < event.size();) {
        std::size_t eol = event.find('\n', at);
        std::string line = event.substr(at, eol - at);
        at = eol + 1;
        if (line.rfind("data:", 0) != 0) continue;
        line.erase(0, line.size() > 5 && line[5] == ' ' ? 6 : 5);
        if (!data.empty()) data += '\n';
        data += line;
      }
      if (data.empty()) continue;
      auto j = nlohmann::json::parse(data, nullptr, false);
      if (j.is_object()) return j;
    }
  }

  std::unique_ptr<AgentStream> stream_;
  std::string host_;
  std::string buffer_;
  std::int64_t last_event_ns_ = 0;            // monotonic; 0 before the first call
  std::int64_t interval_ns_ = 1'000'000'000;  // the server's, from its frames
};

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) == 0) return buf;
  return "";
}

// Reads the GPUs itself, one read per interval, into the same frames a server streams.
class DirectSource final : public LiveSource {
 public:
  DirectSource(std::unique_ptr<gpu::Backend> backend, std::optional<sys::RootedFs> proc,
               int interval_ms, std::string why)
      : backend_(std::move(backend)),
        entities_(BuildEntities(backend_->info())),
        builder_(backend_->info(), entities_, std::move(proc)),
        interval_ns_(std::int64_t{interval_ms} * 1'000'000),
        why_(std::move(why)),
        hostname_(Hostname()) {}

  Result<std::optional<nlohmann::json>> Next(std::chrono::milliseconds timeout) override {
    const std::int64_t now = MonotonicNowNs();
    if (next_due_ns_ > now) {
      const std::int64_t wait =
          std::min<std::int64_t>(next_due_ns_ - now, timeout.count() * 1'000'000);
      std::this_thread::sleep_for(std::chrono::nanoseconds(wait));
      if (MonotonicNowNs() < next_due_ns_) return std::optional<nlohmann::json>();
    }
    // Late reads are skipped, not made up: the next is a whole interval after this one's start.
    const std::int64_t start = MonotonicNowNs();
    next_due_ns_ = next_due_ns_ != 0 && start - next_due_ns_ < interval_ns_
                       ? next_due_ns_ + interval_ns_
                       : start + interval_ns_;
    auto snap = exporter::ReadSnapshot(*backend_, entities_, exporter::LiveFields(), true);
    exporter::FrameContext c{"direct", hostname_, interval_ns_ / 1e9, std::nullopt, 0};
    return std::optional<nlohmann::json>(builder_.Build(*snap, c));
  }

  std::string Describe() const override {
    return why_.empty() ? "direct" : "direct (" + why_ + ")";
  }

 private:
  std::unique_ptr<gpu::Backend> backend_;
  std::vector<Entity> entities_;
  exporter::FrameBuilder builder_;
  std::int64_t interval_ns_;
  std::int64_t next_due_ns_ = 0;
  std::string why_;
  std::string hostname_;
};

Result<std::unique_ptr<LiveSource>> OpenDirect(const LiveSourceOptions& o, std::string why) {
  auto backend = gpu::OpenBackend(WithProcfs(o.gpu, o.procfs_root));
  if (!backend) return backend.error();
  auto proc = ChooseProcfs(o.procfs_root, (*backend)->info().simulated);
  if (!proc) return proc.error();
  // Through the fault layer, so a direct view shows recommended actions too (docs/faults.md): the
  // kernel log of real GPUs when it can be read (quietly not, when it cannot), none for simulated.
  faults::FaultOptions f;
  if (!(*backend)->info().simulated) f.kernel_log = "/dev/kmsg";
  f.procfs_root = o.procfs_root.empty() ? "/proc" : o.procfs_root;
  auto layer = std::make_unique<faults::FaultBackend>(std::move(backend).value(), f);
  return std::unique_ptr<LiveSource>(new DirectSource(std::move(layer), std::move(proc).value(),
                                                      o.interval_ms, std::move(why)));
}

}  // namespace

Result<std::unique_ptr<LiveSource>> OpenLiveSource(const LiveSourceOptions& o) {
  if (o.direct || o.backend_flags) return OpenDirect(o, "");
  const char* env = std::getenv("GPULSE_HOST");
  const bool named = !o.host.empty() || (env != nullptr && *env != '\0');
  const std::string host = ResolveAgentHost(o.host);
  bool reached = false;
  auto stream = OpenAgentStream(host, "/api/v1/stream", &reached);
  if (stream) return std::unique_ptr<LiveSource>(new StreamSource(std::move(stream).value(), host));
  // An agent that answers and refuses (its viewer limit) is not bypassed by reading directly.
  if (named || reached) return stream.error();
  return OpenDirect(o, "no agent at " + host);
}

}  // namespace gpulse::cli
