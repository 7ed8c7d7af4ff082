#include "exporter/page_cache.h"

#include <array>

namespace gpulse::exporter {

void PageCache::Refresh(const std::shared_ptr<const MetricsPage>& page,
                        const std::shared_ptr<const Snapshot>& snap,
                        const std::shared_ptr<const PodLabels>& pods, std::int64_t now_mono_ns) {
  if (page == page_ && snap == snap_ && pods == pods_) return;
  body_.clear();
  page->Render(*snap, now_mono_ns, body_, pods.get(), &ages_at_);
  page_ = page;
  snap_ = snap;
  pods_ = pods;
  gzip_level_.reset();
}

void PageCache::Render(const std::shared_ptr<const MetricsPage>& page,
                       const std::shared_ptr<const Snapshot>& snap,
                       const std::shared_ptr<const PodLabels>& pods, std::int64_t now_mono_ns,
                       std::string& out) {
  std::lock_guard lock(mu_);
  Refresh(page, snap, pods, now_mono_ns);
  out.reserve(out.size() + body_.size() + 1024);
  if (ages_at_ == std::string::npos) {
    out += body_;
    return;
  }
  out.append(body_, 0, ages_at_);
  page->RenderAges(*snap, now_mono_ns, out);
  out.append(body_, ages_at_);
}

Status PageCache::CompressBody(int level) {
  if (gzip_level_ == level) return Status::Ok();
  const std::string_view body = body_;
  const std::size_t split = ages_at_ == std::string::npos ? body.size() : ages_at_;
  auto before = net::DeflatePiece(body.substr(0, split), level);
  if (!before.ok()) return before.error();
  auto after = net::DeflatePiece(body.substr(split), level);
  if (!after.ok()) return after.error();
  before_ = std::move(before).value();
  after_ = std::move(after).value();
  gzip_level_ = level;
  return Status::Ok();
}

Status PageCache::RenderGzip(const std::shared_ptr<const MetricsPage>& page,
                             const std::shared_ptr<const Snapshot>& snap,
                             const std::shared_ptr<const PodLabels>& pods, std::int64_t now_mono_ns,
                             std::string_view tail, int level, std::string& out) {
  std::string ages;
  std::lock_guard lock(mu_);
  Refresh(page, snap, pods, now_mono_ns);
  if (Status s = CompressBody(level); !s.ok()) return s;
  if (ages_at_ != std::string::npos) page->RenderAges(*snap, now_mono_ns, ages);
  auto ages_piece = net::DeflatePiece(ages, level);
  if (!ages_piece.ok()) return ages_piece.error();
  auto tail_piece = net::DeflatePiece(tail, level);
  if (!tail_piece.ok()) return tail_piece.error();
  const std::array<const net::DeflatedPiece*, 4> pieces = {&before_, &ages_piece.value(), &after_,
                                                           &tail_piece.value()};
  net::GzipJoin(pieces, out);
  return Status::Ok();
}

}  // namespace gpulse::exporter
