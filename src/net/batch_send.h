// Writes many short messages, one per socket, with as few system calls as the kernel allows: the
// power collector's requests of one cycle (thousands of sockets, one GET each, once a second).
// With io_uring (Linux 5.6 and later, when the kernel and the sandbox allow it) a chunk of
// kChunk sends is one io_uring_enter, each send tried at once without blocking; elsewhere each
// is one send(2) with MSG_DONTWAIT. Either way a message is written whole, in part (the socket's
// buffer was full) or not at all, as send(2) reports it.
//
// Thread-safety: one BatchSender per thread (it owns a ring); distinct senders may write at once.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace gpulse::net {

class BatchSender {
 public:
  static constexpr std::size_t kChunk = 16;
  // written[i] of a message whose fate is not known (the ring failed while it was in flight): it
  // may be on the wire, so its connection must not carry another request.
  static constexpr ssize_t kUnknown = -2;

  // Sets up a ring when it can; `use_uring` false (or a failure) keeps to send(2).
  explicit BatchSender(bool use_uring = true);
  ~BatchSender();
  BatchSender(const BatchSender&) = delete;
  BatchSender& operator=(const BatchSender&) = delete;

  // Whether sends go through io_uring; when not, why (empty when it was not asked for). A ring
  // that fails is given up for send(2), the reason kept.
  bool uring() const { return ring_ != nullptr; }
  const std::string& fallback_reason() const { return fallback_reason_; }

  // Writes bytes[i] on fds[i] for every i, written[i] being what send(2) would return (bytes, or
  // -1; the error is not kept), or kUnknown. `before(i)` runs just before the system call that
  // carries message i: with io_uring, for every message of a chunk before that chunk's one call
  // (so a stamp taken there is early by at most the chunk's other sends, about 0.1 ms on
  // loopback).
  void Send(std::span<const int> fds, std::span<const std::string_view> bytes,
            std::span<ssize_t> written, const std::function<void(std::size_t)>& before);

 private:
  struct Ring;
  void SendChunk(std::span<const int> fds, std::span<const std::string_view> bytes,
                 std::span<ssize_t> written);

  std::unique_ptr<Ring> ring_;
  std::string fallback_reason_;
};

}  // namespace gpulse::net
