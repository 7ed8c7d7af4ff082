#include "net/batch_send.h"

#include <liburing.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace gpulse::net {

namespace {

ssize_t SendOne(int fd, std::string_view bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

struct BatchSender::Ring {
  io_uring ring{};
  bool ready = false;
  ~Ring() {
    if (ready) io_uring_queue_exit(&ring);
  }
};

BatchSender::BatchSender(bool use_uring) {
  if (!use_uring) return;
  auto r = std::make_unique<Ring>();
  // A ring of one chunk: every chunk is submitted and reaped before the next is prepared.
  if (int rc = io_uring_queue_init(kChunk, &r->ring, 0); rc < 0) {
    fallback_reason_ = std::string("io_uring setup: ") + std::strerror(-rc);
    return;
  }
  r->ready = true;
  ring_ = std::move(r);
}

BatchSender::~BatchSender() = default;

void BatchSender::Send(std::span<const int> fds, std::span<const std::string_view> bytes,
                       std::span<ssize_t> written, const std::function<void(std::size_t)>& before) {
  const std::size_t n = std::min({fds.size(), bytes.size(), written.size()});
  for (std::size_t at = 0; at < n; at += kChunk) {
    const std::size_t end = std::min(n, at + kChunk);
    if (!ring_) {  // none set up, or given up during an earlier chunk
      for (std::size_t i = at; i < end; ++i) {
        before(i);
        written[i] = SendOne(fds[i], bytes[i]);
      }
      continue;
    }
    for (std::size_t i = at; i < end; ++i) before(i);
    SendChunk(fds.subspan(at, end - at), bytes.subspan(at, end - at),
              written.subspan(at, end - at));
  }
}

void BatchSender::SendChunk(std::span<const int> fds, std::span<const std::string_view> bytes,
                            std::span<ssize_t> written) {
  io_uring* ring = &ring_->ring;
  std::size_t queued = 0;
  for (std::size_t i = 0; i < fds.size(); ++i) {
    io_uring_sqe* sqe = io_uring_get_sqe(ring);
    if (sqe == nullptr) {  // not with a ring of kChunk entries, each chunk reaped whole
      written[i] = SendOne(fds[i], bytes[i]);
      continue;
    }
    // MSG_DONTWAIT: the send is tried during the submission and never waits for buffer space.
    io_uring_prep_send(sqe, fds[i], bytes[i].data(), bytes[i].size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    io_uring_sqe_set_data64(sqe, i);
    written[i] = kUnknown;
    ++queued;
  }
  if (queued == 0) return;
  int rc = 0;
  do {
    rc = io_uring_submit_and_wait(ring, static_cast<unsigned>(queued));
  } while (rc == -EINTR);
  if (rc >= 0 && static_cast<std::size_t>(rc) < queued) rc = -EIO;  // some were not submitted
  int unsupported = 0;
  for (std::size_t got = 0; rc >= 0 && got < queued; ++got) {
    io_uring_cqe* cqe = nullptr;
    do {
      rc = io_uring_wait_cqe(ring, &cqe);
    } while (rc == -EINTR);
    if (rc < 0) break;
    const std::uint64_t i = io_uring_cqe_get_data64(cqe);
    if (i < written.size()) written[i] = cqe->res < 0 ? -1 : cqe->res;
    // A kernel without the send operation (before 5.6) refuses every one: give the ring up.
    if (cqe->res == -EINVAL || cqe->res == -EOPNOTSUPP) unsupported = cqe->res;
    io_uring_cqe_seen(ring, cqe);
  }
  if (rc >= 0 && unsupported != 0) rc = unsupported;
  if (rc < 0) {  // the sends not reaped stay kUnknown; the ring is not used again
    fallback_reason_ = std::string("io_uring send: ") + std::strerror(-rc);
    ring_.reset();
  }
}

}  // namespace gpulse::net
