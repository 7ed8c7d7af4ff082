#include "exporter/page_cache.h"

namespace gpulse::exporter {

void PageCache::Render(const std::shared_ptr<const MetricsPage>& page,
                       const std::shared_ptr<const Snapshot>& snap,
                       const std::shared_ptr<const PodLabels>& pods, std::int64_t now_mono_ns,
                       std::string& out) {
  std::lock_guard lock(mu_);
  if (page != page_ || snap != snap_ || pods != pods_) {
    body_.clear();
    page->Render(*snap, now_mono_ns, body_, pods.get(), &ages_at_);
    page_ = page;
    snap_ = snap;
    pods_ = pods;
  }
  out.reserve(out.size() + body_.size() + 1024);
  if (ages_at_ == std::string::npos) {
    out += body_;
    return;
  }
  out.append(body_, 0, ages_at_);
  page->RenderAges(*snap, now_mono_ns, out);
  out.append(body_, ages_at_);
}

}  // namespace gpulse::exporter
