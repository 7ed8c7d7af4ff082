#include "power/collector/diagnostics.h"

#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace gpulse::power {

struct DiagnosticsWriter::Shared {
  std::unique_ptr<sys::Fd> file;
  size_t max_pending = 0;
  bool summary = true;
  bool stall = false;  // InjectStall
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::string> queue;
  bool closing = false;
  bool finished = false;
  uint64_t dropped = 0;
  std::thread thread;
  std::condition_variable done_cv;
};

namespace {

// Best effort: a failed write stops the writing (the records are diagnostics, never evidence).
bool WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void WriterLoop(std::shared_ptr<DiagnosticsWriter::Shared> s) {
  bool writable = true;
  for (;;) {
    std::unique_lock<std::mutex> lock(s->mu);
    s->cv.wait(lock, [&] { return !s->queue.empty() || s->closing; });
    if (s->queue.empty() && s->closing) break;
    std::string burst;  // every queued record in one write
    for (; !s->queue.empty(); s->queue.pop_front()) burst += s->queue.front();
    bool stall = s->stall;
    lock.unlock();
    if (stall) {
      for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
    }
    if (writable) writable = WriteAll(s->file->get(), burst);
  }
  uint64_t dropped;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    dropped = s->dropped;
  }
  std::string summary =
      Json{{"event", "diagnostic_summary"}, {"dropped_records", dropped}}.dump() + "\n";
  if (writable && s->summary) WriteAll(s->file->get(), summary);
  s->file.reset();
  std::lock_guard<std::mutex> lock(s->mu);
  s->finished = true;
  s->done_cv.notify_all();
}

}  // namespace

DiagnosticsWriter::DiagnosticsWriter(std::unique_ptr<sys::Fd> file, size_t max_pending,
                                     bool summary)
    : shared_(std::make_shared<Shared>()) {
  shared_->file = std::move(file);
  shared_->max_pending = max_pending;
  shared_->summary = summary;
  shared_->thread = std::thread(WriterLoop, shared_);
}

DiagnosticsWriter::~DiagnosticsWriter() { Close(std::chrono::steady_clock::now()); }

void DiagnosticsWriter::Push(Json record) {
  PushText(record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

void DiagnosticsWriter::PushText(std::string line) {
  std::lock_guard<std::mutex> lock(shared_->mu);
  if (shared_->closing) return;
  if (shared_->queue.size() >= shared_->max_pending) {
    ++shared_->dropped;
    return;
  }
  shared_->queue.push_back(std::move(line));
  shared_->cv.notify_one();
}

void DiagnosticsWriter::PushIfRoom(const std::function<Json()>& make) {
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    if (shared_->closing) return;
    if (shared_->queue.size() >= shared_->max_pending) {
      ++shared_->dropped;
      return;
    }
  }
  Push(make());
}

bool DiagnosticsWriter::Close(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(shared_->mu);
  if (!shared_->thread.joinable()) return shared_->finished;
  shared_->closing = true;
  shared_->cv.notify_one();
  bool ok = shared_->done_cv.wait_until(lock, deadline, [&] { return shared_->finished; }) ||
            shared_->finished;
  lock.unlock();
  // Finished (or failed to open): join. Still writing at the deadline: abandon it; it owns Shared.
  std::unique_lock<std::mutex> relock(shared_->mu);
  bool exited = shared_->finished;
  relock.unlock();
  if (exited)
    shared_->thread.join();
  else
    shared_->thread.detach();
  return ok;
}

void DiagnosticsWriter::InjectStall() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->stall = true;
}

uint64_t DiagnosticsWriter::dropped() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->dropped;
}

}  // namespace gpulse::power
