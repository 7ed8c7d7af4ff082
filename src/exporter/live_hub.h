// The live views' one read per interval, shared by every viewer (the coalesced probe of
// shared/seeds/003): while at least one viewer is connected, the hub's thread asks for one read
// each interval — through the exporter's coalesced probe, so a scrape at the same moment shares it
// too — builds one frame (live_frame.h) and pushes that same frame to every viewer's stream. Each
// stream holds a few frames at most and drops its oldest when its client reads too slowly, so a
// slow viewer never delays the others. Without viewers nothing is read.
//
//   /api/v1/stream --Subscribe--> streams[] <--Push-- hub thread --read--> probe --> backend
//   /api/v1/frame  --FrameNow---> callbacks <--------'   (one read per interval, all viewers)
//
// Thread-safety: every public member may be called from any thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "exporter/live_frame.h"
#include "exporter/snapshot.h"
#include "net/event_stream.h"

namespace gpulse::exporter {

struct LiveHubOptions {
  std::int64_t interval_ms = 1000;
  std::size_t max_viewers = 128;
  std::size_t queue_frames = 4;  // per viewer; the oldest is dropped past this
  std::size_t history_points = 60;
  // The reader's own refresh (the exporter's --min-refresh-ms): a read that lacked the live fields
  // is retried after it, when the reader gives a new snapshot.
  std::int64_t min_refresh_ms = 100;
  std::string source = "exporter";
  std::string hostname;
};

struct LiveHubStats {
  std::size_t viewers = 0;
  std::uint64_t frames = 0;         // frames built (one per device read)
  std::uint64_t dropped = 0;        // frames dropped for slow viewers, all viewers together
  std::uint64_t refused = 0;        // viewers refused at the limit
  std::uint64_t viewers_total = 0;  // viewers ever connected
};

class LiveHub {
 public:
  // Blocks until a read is done; nullptr when none could be made (shutting down). Called on the
  // hub's thread only.
  using ReadFn = std::function<std::shared_ptr<const Snapshot>()>;
  // A frame as JSON text (one line), or nullptr when no read could be made.
  using FrameFn = std::function<void(std::shared_ptr<const std::string>)>;

  LiveHub(LiveHubOptions options, const SystemInfo& info, std::vector<Entity> entities,
          std::optional<sys::RootedFs> proc, ReadFn read);
  // Stops reading, closes every stream, answers waiting FrameNow callers and joins the thread.
  // Afterwards active() is false; stats() and Exposition() still answer. Idempotent.
  void Stop();
  ~LiveHub();  // Stop()
  LiveHub(const LiveHub&) = delete;
  LiveHub& operator=(const LiveHub&) = delete;

  // A new viewer's stream: the latest frame is queued at once when there is one, otherwise the
  // next read starts now. Errors: Unavailable at the viewer limit, naming it.
  Result<std::shared_ptr<net::EventStream>> Subscribe();
  // Calls `done` (on the hub's thread) with the latest frame when it is less than an interval old,
  // else with the frame of a read made now.
  void FrameNow(FrameFn done);

  // Whether reads are for the live views now (viewers connected or a frame asked for): the
  // exporter then reads LiveFields() and the processes too.
  bool active() const;
  LiveHubStats stats() const;
  // The hub's own metrics in the Prometheus text format (gpulse_live_*).
  std::string Exposition() const;

  // A frame as one server-sent event.
  static std::string SseEvent(std::uint64_t seq, const std::string& json_line);

 private:
  void Loop();
  void Tick();
  std::shared_ptr<const Snapshot> ReadWithLiveFields();

  const LiveHubOptions options_;
  const ReadFn read_;
  FrameBuilder builder_;                       // hub thread only
  std::shared_ptr<const Snapshot> last_snap_;  // hub thread only

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<std::shared_ptr<net::EventStream>> streams_;
  std::vector<FrameFn> waiting_;
  std::shared_ptr<const std::string> latest_sse_, latest_json_;
  std::int64_t latest_mono_ns_ = 0;
  std::int64_t next_due_ns_ = 0;      // 0: now
  bool reading_ = false;              // a tick is in flight: its end sets the next due time
  std::uint64_t dropped_closed_ = 0;  // drops counted from streams already gone
  LiveHubStats stats_;
  bool stop_ = false;
  std::thread thread_;  // last
};

}  // namespace gpulse::exporter
