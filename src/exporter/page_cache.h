// The /metrics body of the last read, kept until the next one: the scrapes a read serves (every
// scrape that joins it or comes within --min-refresh-ms of its start) copy the body instead of
// rendering every series again. Only the sample ages, which depend on the moment of the scrape,
// are rendered per scrape.
//
// Thread-safety: Render may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "exporter/exposition.h"
#include "exporter/snapshot.h"

namespace gpulse::exporter {

class PageCache {
 public:
  // Appends what page.Render(*snap, now_mono_ns, out, pods.get()) would. A new page (a counters
  // reload), snapshot or set of pod labels renders the body again.
  void Render(const std::shared_ptr<const MetricsPage>& page,
              const std::shared_ptr<const Snapshot>& snap,
              const std::shared_ptr<const PodLabels>& pods, std::int64_t now_mono_ns,
              std::string& out);

 private:
  std::mutex mu_;  // guards everything below
  // What the body was rendered from; held so that a new one can never reuse an old address.
  std::shared_ptr<const MetricsPage> page_;
  std::shared_ptr<const Snapshot> snap_;
  std::shared_ptr<const PodLabels> pods_;
  std::string body_;
  std::size_t ages_at_ = std::string::npos;  // where the ages go in body_ (npos: none)
};

}  // namespace gpulse::exporter
