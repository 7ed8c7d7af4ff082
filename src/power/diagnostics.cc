#include "power/diagnostics.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

namespace gpulse::power {

struct DiagnosticsWriter::Shared {
  std::filesystem::path path;
  size_t max_pending = 0;
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

void WriterLoop(std::shared_ptr<DiagnosticsWriter::Shared> s) {
  std::FILE* f = std::fopen(s->path.c_str(), "we");  // "e": O_CLOEXEC
  for (;;) {
    std::unique_lock<std::mutex> lock(s->mu);
    s->cv.wait(lock, [&] { return !s->queue.empty() || s->closing; });
    if (s->queue.empty() && s->closing) break;
    std::string line = std::move(s->queue.front());
    s->queue.pop_front();
    bool drained = s->queue.empty();
    lock.unlock();
    if (f) {
      std::fwrite(line.data(), 1, line.size(), f);
      if (drained) std::fflush(f);  // one write per burst, not per record
    }
  }
  uint64_t dropped;
  {
    std::lock_guard<std::mutex> lock(s->mu);
    dropped = s->dropped;
  }
  if (f) {
    std::string summary =
        Json{{"event", "diagnostic_summary"}, {"dropped_records", dropped}}.dump() + "\n";
    std::fwrite(summary.data(), 1, summary.size(), f);
    std::fclose(f);
  }
  std::lock_guard<std::mutex> lock(s->mu);
  s->finished = true;
  s->done_cv.notify_all();
}

}  // namespace

DiagnosticsWriter::DiagnosticsWriter(std::filesystem::path path, size_t max_pending)
    : shared_(std::make_shared<Shared>()) {
  shared_->path = std::move(path);
  shared_->max_pending = max_pending;
  shared_->thread = std::thread(WriterLoop, shared_);
}

DiagnosticsWriter::~DiagnosticsWriter() { Close(std::chrono::steady_clock::now()); }

void DiagnosticsWriter::Push(Json record) {
  std::string line = record.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
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

uint64_t DiagnosticsWriter::dropped() const {
  std::lock_guard<std::mutex> lock(shared_->mu);
  return shared_->dropped;
}

}  // namespace gpulse::power
