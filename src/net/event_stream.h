// A response that stays open and carries a sequence of frames (server-sent events, the live views'
// /api/v1/stream). A handler answers with an HttpResponse whose `stream` is set; the server writes
// the head, then every frame pushed, in order, as HTTP/1.1 chunks, until the stream is closed (then
// the connection closes too) or the client goes away (then Push answers false).
//
// A stream holds at most `capacity` frames not yet written: pushing to a full one drops the oldest
// and counts it, so a slow client never holds up the producer or other clients, and never costs
// more than `capacity` frames of memory. Frames are shared, so one frame pushed to a hundred
// streams is one string.
//
// Thread-safety: every member may be called from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace gpulse::net {

class EventStream {
 public:
  using Frame = std::shared_ptr<const std::string>;

  // REQUIRES: capacity >= 1
  explicit EventStream(std::size_t capacity);

  // Queues a frame; false once the stream is closed or its client has gone (forget it then).
  bool Push(Frame frame);
  // Ends the response once the queued frames are written.
  void Close();
  // Closed by Close, or its client is gone.
  bool closed() const;
  // Frames dropped so far because the client read too slowly.
  std::uint64_t dropped() const;

  // The server's side. The waker runs (under the stream's lock, so it must only post elsewhere)
  // whenever a frame arrives or the stream closes.
  void SetWaker(std::function<void()> waker);
  // The next frame to write, or nullptr; `*done` is true when the stream is closed and nothing is
  // left.
  Frame Pop(bool* done);
  // The connection is gone: closed for good, queued frames dropped, waker forgotten (it is never
  // called after this returns).
  void Detach();

 private:
  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::deque<Frame> queue_;
  std::function<void()> waker_;
  std::uint64_t dropped_ = 0;
  bool closed_ = false;
  bool detached_ = false;
};

}  // namespace gpulse::net
