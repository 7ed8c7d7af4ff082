// net::BatchSender: many short messages, one per socket, through io_uring or send(2).
#include "net/batch_send.h"

#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace gpulse::net {
namespace {

struct Pair {
  int mine = -1, peer = -1;
  Pair() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0) {
      mine = fds[0];
      peer = fds[1];
    }
  }
  ~Pair() {
    if (mine >= 0) ::close(mine);
    if (peer >= 0) ::close(peer);
  }
  int Pending() const {
    int n = -1;
    ::ioctl(peer, FIONREAD, &n);
    return n;
  }
  std::string ReadAll() const {
    std::string out(1 << 16, '\0');
    ssize_t n = ::recv(peer, out.data(), out.size(), MSG_DONTWAIT);
    out.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return out;
  }
};

class BatchSenderTest : public ::testing::TestWithParam<bool> {
 protected:
  // The sender under test; skips the io_uring case where the kernel or sandbox refuses a ring.
  std::unique_ptr<BatchSender> Make() {
    auto s = std::make_unique<BatchSender>(GetParam());
    if (GetParam() && !s->uring()) {
      EXPECT_FALSE(s->fallback_reason().empty()) << "a fallback names its reason";
    }
    return s;
  }
};

TEST_P(BatchSenderTest, EveryMessageArrivesWholeOnItsOwnSocketAcrossChunks) {
  auto sender = Make();
  if (GetParam() && !sender->uring()) GTEST_SKIP() << "io_uring: " << sender->fallback_reason();
  const size_t n = 3 * BatchSender::kChunk + 5;  // chunk boundaries, and a short last chunk
  std::vector<Pair> pairs(n);
  std::vector<int> fds;
  std::vector<std::string> text;
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_GE(pairs[i].mine, 0);
    fds.push_back(pairs[i].mine);
    text.push_back("GET /metrics?i=" + std::to_string(i) + " HTTP/1.1\r\n\r\n");
  }
  for (const auto& t : text) bytes.emplace_back(t);
  std::vector<ssize_t> written(n, 12345);
  std::vector<size_t> order;
  sender->Send(fds, bytes, written, [&](size_t i) {
    order.push_back(i);
    EXPECT_EQ(pairs[i].Pending(), 0) << "before(" << i << ") runs before its message is written";
  });
  ASSERT_EQ(order.size(), n);
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(order[i], i);
    EXPECT_EQ(written[i], static_cast<ssize_t>(text[i].size())) << i;
    EXPECT_EQ(pairs[i].ReadAll(), text[i]) << i;
  }
  EXPECT_EQ(sender->uring(), GetParam()) << "a working ring is kept";
}

TEST_P(BatchSenderTest, AClosedPeerOrAFullBufferFailsThatMessageOnlyAndNeverBlocks) {
  auto sender = Make();
  if (GetParam() && !sender->uring()) GTEST_SKIP() << "io_uring: " << sender->fallback_reason();
  Pair ok1, closed, full, ok2;
  ::close(closed.peer);
  closed.peer = -1;
  // Fill `full` until the kernel takes nothing more.
  std::string block(4096, 'x');
  while (::send(full.mine, block.data(), block.size(), MSG_DONTWAIT) > 0) {
  }
  while (::send(full.mine, "x", 1, MSG_DONTWAIT) > 0) {
  }
  const std::string msg = "GET / HTTP/1.1\r\n\r\n";
  std::vector<int> fds = {ok1.mine, closed.mine, full.mine, ok2.mine};
  std::vector<std::string_view> bytes(4, msg);
  std::vector<ssize_t> written(4, 0);
  sender->Send(fds, bytes, written, [](size_t) {});  // no SIGPIPE: the test process survives
  EXPECT_EQ(written[0], static_cast<ssize_t>(msg.size()));
  EXPECT_EQ(written[1], -1) << "the peer is gone";
  EXPECT_NE(written[2], static_cast<ssize_t>(msg.size())) << "no room: refused or cut short";
  EXPECT_NE(written[2], BatchSender::kUnknown);
  EXPECT_EQ(written[3], static_cast<ssize_t>(msg.size())) << "a failure stays with its socket";
  EXPECT_EQ(ok1.ReadAll(), msg);
  EXPECT_EQ(ok2.ReadAll(), msg);
}

TEST_P(BatchSenderTest, NothingToSendIsNoCall) {
  auto sender = Make();
  size_t calls = 0;
  sender->Send({}, {}, {}, [&](size_t) { ++calls; });
  EXPECT_EQ(calls, 0u);
}

INSTANTIATE_TEST_SUITE_P(Writes, BatchSenderTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "IoUring" : "Send"; });

TEST(BatchSender, SendWithoutIoUringSaysNothingIsAmiss) {
  BatchSender s(false);
  EXPECT_FALSE(s.uring());
  EXPECT_TRUE(s.fallback_reason().empty());
}

}  // namespace
}  // namespace gpulse::net
