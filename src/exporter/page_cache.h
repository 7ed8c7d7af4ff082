// The /metrics body of the last read, kept until the next one: the scrapes a read serves (every
// scrape that joins it or comes within --min-refresh-ms of its start) copy the body instead of
// rendering every series again. Only the sample ages, which depend on the moment of the scrape,
// are rendered per scrape. For a client that accepts gzip (a Prometheus server does), the kept
// body is also kept compressed, in the two pieces around the ages, so that a scrape compresses
// only its ages and what follows the page (net/gzip_pieces.h).
//
// Thread-safety: Render and RenderGzip may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "exporter/exposition.h"
#include "exporter/snapshot.h"
#include "net/gzip_pieces.h"

namespace gpulse::exporter {

class PageCache {
 public:
  // Appends what page.Render(*snap, now_mono_ns, out, pods.get()) would. A new page (a counters
  // reload), snapshot or set of pod labels renders the body again.
  void Render(const std::shared_ptr<const MetricsPage>& page,
              const std::shared_ptr<const Snapshot>& snap,
              const std::shared_ptr<const PodLabels>& pods, std::int64_t now_mono_ns,
              std::string& out);

  // Appends one gzip member whose content is what Render would append followed by `tail` (what
  // the answer adds after the page), compressed at `level`. An error only when zlib fails.
  Status RenderGzip(const std::shared_ptr<const MetricsPage>& page,
                    const std::shared_ptr<const Snapshot>& snap,
                    const std::shared_ptr<const PodLabels>& pods, std::int64_t now_mono_ns,
                    std::string_view tail, int level, std::string& out);

 private:
  // Renders body_ again unless it was rendered from these; called with mu_ held.
  void Refresh(const std::shared_ptr<const MetricsPage>& page,
               const std::shared_ptr<const Snapshot>& snap,
               const std::shared_ptr<const PodLabels>& pods, std::int64_t now_mono_ns);
  // Compresses body_'s two pieces unless done for this body at `level`; called with mu_ held.
  Status CompressBody(int level);

  std::mutex mu_;  // guards everything below
  // What the body was rendered from; held so that a new one can never reuse an old address.
  std::shared_ptr<const MetricsPage> page_;
  std::shared_ptr<const Snapshot> snap_;
  std::shared_ptr<const PodLabels> pods_;
  std::string body_;
  std::size_t ages_at_ = std::string::npos;  // where the ages go in body_ (npos: none)
  // body_ before and from ages_at_ (all of it in before_ when there are no ages), compressed at
  // gzip_level_; unset until a gzip scrape asks, and again after each new body.
  std::optional<int> gzip_level_;
  net::DeflatedPiece before_, after_;
};

}  // namespace gpulse::exporter
