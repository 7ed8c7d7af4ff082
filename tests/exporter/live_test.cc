// The live views' plumbing: a stream's bounded queue, streamed answers on a loopback server (a
// client that stops reading never holds up another), frames (absent readings null, history
// bounded, lost GPUs), and the hub's one read per interval for every viewer and its viewer limit.
// Every wait is bounded; nothing asserts on elapsed time.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "exporter/live_frame.h"
#include "exporter/live_hub.h"
#include "net/event_stream.h"
#include "net/server.h"

namespace gpulse {
namespace {

using namespace std::chrono_literals;

template <typename Pred>
bool WaitFor(Pred p, std::chrono::seconds limit = 20s) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (!p()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

net::EventStream::Frame F(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}

TEST(EventStream, AFullQueueDropsItsOldestAndCountsIt) {
  net::EventStream s(2);
  EXPECT_TRUE(s.Push(F("a")));
  EXPECT_TRUE(s.Push(F("b")));
  EXPECT_TRUE(s.Push(F("c")));
  EXPECT_EQ(s.dropped(), 1u);
  bool done = false;
  EXPECT_EQ(*s.Pop(&done), "b");
  EXPECT_EQ(*s.Pop(&done), "c");
  EXPECT_EQ(s.Pop(&done), nullptr);
  EXPECT_FALSE(done) << "open and empty: more may come";
  s.Close();
  EXPECT_FALSE(s.Push(F("d")));
  EXPECT_EQ(s.Pop(&done), nullptr);
  EXPECT_TRUE(done);
}

TEST(EventStream, ADetachedStreamRefusesFramesAndNeverWakes) {
  net::EventStream s(4);
  int wakes = 0;
  s.SetWaker([&] { ++wakes; });
  s.Push(F("a"));
  EXPECT_EQ(wakes, 1);
  s.Detach();
  EXPECT_TRUE(s.closed());
  EXPECT_FALSE(s.Push(F("b")));
  EXPECT_EQ(wakes, 1);
}

int Connect(const std::string& address, int rcvbuf = 0) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1))));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  const std::string req = "GET /stream HTTP/1.1\r\nHost: t\r\n\r\n";
  EXPECT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  return fd;
}

// Reads until `needle` has arrived (or the peer closes / 10 s pass with nothing).
std::string ReadUntil(int fd, const std::string& needle) {
  std::string got;
  char buf[65536];
  while (got.find(needle) == std::string::npos) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
  }
  return got;
}

class StreamServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    net::ServerOptions o;
    o.address = "127.0.0.1:0";
    o.write_timeout = 60s;  // the slow client must stay connected while the fast one finishes
    auto s = net::Server::Create(o, [this](const net::HttpRequest&, net::Respond respond) {
      auto stream = std::make_shared<net::EventStream>(4);
      {
        std::lock_guard lock(mu_);
        streams_.push_back(stream);
      }
      net::HttpResponse r;
      r.content_type = "text/event-stream";
      r.stream = stream;
      respond(std::move(r));
    });
    ASSERT_TRUE(s.ok()) << s.error().message;
    server_ = std::move(s).value();
    loop_ = std::thread([this] { server_->Run(); });
  }
  void TearDown() override {
    server_->Shutdown();
    loop_.join();
  }
  std::size_t Streams() {
    std::lock_guard lock(mu_);
    return streams_.size();
  }
  std::shared_ptr<net::EventStream> StreamAt(std::size_t i) {
    std::lock_guard lock(mu_);
    return streams_.at(i);
  }

  std::unique_ptr<net::Server> server_;
  std::thread loop_;
  std::mutex mu_;
  std::vector<std::shared_ptr<net::EventStream>> streams_;
};

TEST_F(StreamServerTest, FramesArriveInOrderAsChunksAfterTheHead) {
  int fd = Connect(server_->local_address());
  ASSERT_TRUE(WaitFor([&] { return Streams() == 1; }));
  StreamAt(0)->Push(F("data: one\n\n"));
  StreamAt(0)->Push(F("data: two\n\n"));
  std::string got = ReadUntil(fd, "two");
  EXPECT_EQ(got.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << got;
  EXPECT_NE(got.find("Transfer-Encoding: chunked"), std::string::npos) << got;
  EXPECT_NE(got.find("Cache-Control: no-cache"), std::string::npos) << got;
  ASSERT_NE(got.find("one"), std::string::npos);
  EXPECT_LT(got.find("one"), got.find("two"));
  StreamAt(0)->Close();
  got += ReadUntil(fd, "0\r\n\r\n");
  EXPECT_NE(got.find("\r\n0\r\n\r\n"), std::string::npos) << "the last chunk ends the answer";
  close(fd);
}

TEST_F(StreamServerTest, AClientThatStopsReadingHoldsUpNobody) {
  int slow = Connect(server_->local_address(), 4096);
  ASSERT_TRUE(WaitFor([&] { return Streams() == 1; }));
  int fast = Connect(server_->local_address());
  ASSERT_TRUE(WaitFor([&] { return Streams() == 2; }));
  const std::string big(64 * 1024, 'x');
  std::string last;
  for (int i = 0; i < 200; ++i) {
    last = "data: frame " + std::to_string(i) + " " + big + "\n\n";
    StreamAt(0)->Push(F(last));
    StreamAt(1)->Push(F(last));
    if (i % 8 == 0) std::this_thread::sleep_for(1ms);
  }
  StreamAt(1)->Push(F("data: the end\n\n"));
  std::string got = ReadUntil(fast, "the end");
  EXPECT_NE(got.find("the end"), std::string::npos) << "the reading client got every last frame";
  EXPECT_GT(StreamAt(0)->dropped(), 0u) << "the stalled client's queue dropped its oldest";
  EXPECT_FALSE(StreamAt(0)->closed());
  close(slow);
  EXPECT_TRUE(WaitFor([&] { return StreamAt(0)->closed(); })) << "a client that leaves is noticed";
  close(fast);
}

SystemInfo TwoGpusAndALostOne() {
  SystemInfo info;
  info.backend = "nvml";
  for (unsigned i = 0; i < 2; ++i) {
    DeviceInfo d;
    d.index = i;
    d.name = "NVIDIA A40";
    d.uuid = "GPU-" + std::to_string(i);
    d.memory_total_bytes = std::uint64_t{48} << 30;
    d.power_limit_watts = 300;
    d.max_sm_clock_mhz = 1740;
    info.devices.push_back(d);
  }
  SkippedDevice s;
  s.index = 2;
  s.lost = true;
  s.reason = "GPU is lost";
  info.skipped.push_back(s);
  return info;
}

std::shared_ptr<exporter::Snapshot> Read(const std::vector<Entity>& entities, double util) {
  auto snap = std::make_shared<exporter::Snapshot>();
  snap->entities.resize(entities.size());
  for (auto& r : snap->entities) {
    r.sample.values.assign(AllFields().size(), std::nullopt);
    r.sample.t_unix_ns = 1'700'000'000'000'000'000;
  }
  snap->entities[0].sample.values[*IndexOf(203)] = util;
  snap->entities[0].sample.values[*IndexOf(155)] = 250.5;
  snap->entities[0].sample.values[*IndexOf(252)] = 1024;  // MiB
  snap->fields.assign(exporter::LiveFields().begin(), exporter::LiveFields().end());
  return snap;
}

TEST(FrameBuilder, AbsentIsNullLostIsLostAndHistoryIsBounded) {
  SystemInfo info = TwoGpusAndALostOne();
  auto entities = BuildEntities(info);
  ASSERT_EQ(entities.size(), 3u);
  exporter::FrameBuilder b(info, entities, std::nullopt, 3);
  nlohmann::json f;
  for (int i = 0; i < 5; ++i) f = b.Build(*Read(entities, 10.0 * i), {"exporter", "h", 1, 2, 0});
  EXPECT_EQ(f["format"], "gpulse.live-frame/v1");
  EXPECT_EQ(f["seq"], 5);
  EXPECT_EQ(f["viewers"], 2);
  const auto& g0 = f["entities"][0];
  EXPECT_EQ(g0["utilization_percent"], 40.0);
  EXPECT_EQ(g0["memory_used_bytes"], 1024.0 * 1024 * 1024);
  EXPECT_EQ(g0["memory_total_bytes"], 48.0 * (1u << 30)) << "the structural total stands in";
  EXPECT_EQ(g0["power_limit_watts"], 300.0);
  EXPECT_EQ(g0["sm_clock_max_mhz"], 1740.0);
  EXPECT_TRUE(g0["temperature_celsius"].is_null()) << "absent, never 0";
  EXPECT_EQ(g0["history"]["utilization_percent"], nlohmann::json({20.0, 30.0, 40.0}));
  const auto& g1 = f["entities"][1];
  EXPECT_TRUE(g1["utilization_percent"].is_null());
  EXPECT_EQ(g1["history"]["power_watts"], nlohmann::json({nullptr, nullptr, nullptr}));
  const auto& lost = f["entities"][2];
  EXPECT_EQ(lost["state"], "lost");
  EXPECT_EQ(lost["reason"], "GPU is lost");
  EXPECT_TRUE(lost["memory_total_bytes"].is_null());
  EXPECT_TRUE(f["viewers"].is_number());
}

TEST(FrameBuilder, IntervalsWithoutAReadAreGapsInTheHistory) {
  SystemInfo info = TwoGpusAndALostOne();
  auto entities = BuildEntities(info);
  exporter::FrameBuilder b(info, entities, std::nullopt, 5);
  auto first = Read(entities, 10);
  b.Build(*first, {"agent", "h", 1, 1, 0});
  auto later = Read(entities, 20);
  for (auto& r : later->entities) r.sample.t_unix_ns += 3'000'000'000;  // 3 intervals on
  nlohmann::json f = b.Build(*later, {"agent", "h", 1, 1, 0});
  EXPECT_EQ(f["entities"][0]["history"]["utilization_percent"],
            nlohmann::json({10.0, nullptr, nullptr, 20.0}))
      << "two intervals nobody read";
  for (auto& r : later->entities) r.sample.t_unix_ns += 3'600'000'000'000;  // an hour on
  f = b.Build(*later, {"agent", "h", 1, 1, 0});
  EXPECT_EQ(f["entities"][0]["history"]["utilization_percent"],
            nlohmann::json({nullptr, nullptr, nullptr, nullptr, 20.0}))
      << "at most a whole history of gaps";
}

TEST(LiveHub, EveryViewerGetsTheSameFramesFromOneReadEach) {
  SystemInfo info = TwoGpusAndALostOne();
  auto entities = BuildEntities(info);
  std::atomic<int> reads{0};
  exporter::LiveHubOptions o;
  o.interval_ms = 100;
  o.max_viewers = 50;
  o.queue_frames = 64;
  auto hub = std::make_unique<exporter::LiveHub>(o, info, entities, std::nullopt, [&] {
    ++reads;
    return std::shared_ptr<const exporter::Snapshot>(Read(entities, reads.load()));
  });
  EXPECT_FALSE(hub->active()) << "no viewer, no reads";
  std::vector<std::shared_ptr<net::EventStream>> viewers;
  for (int i = 0; i < 50; ++i) {
    auto s = hub->Subscribe();
    ASSERT_TRUE(s.ok());
    viewers.push_back(*s);
  }
  auto refused = hub->Subscribe();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("viewer limit reached: 50"), std::string::npos);
  std::vector<std::vector<std::string>> got(viewers.size());
  ASSERT_TRUE(WaitFor([&] {
    for (std::size_t i = 0; i < viewers.size(); ++i) {
      bool done = false;
      while (auto f = viewers[i]->Pop(&done)) got[i].push_back(*f);
    }
    for (const auto& g : got)
      if (g.size() < 4) return false;
    return true;
  }));
  hub.reset();  // joins: no read after this
  const auto& first = got[0];
  for (const auto& g : got) {
    for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(g[k], first[k]) << "the same frame, shared";
  }
  EXPECT_EQ(first[0].rfind("id: 1\nevent: frame\ndata: {", 0), 0u) << first[0];
  // Each read made exactly one frame, whatever the number of viewers.
  auto last = nlohmann::json::parse(first[3].substr(first[3].find('{')));
  EXPECT_EQ(last["seq"], 4);
  EXPECT_GE(reads.load(), 4);
  EXPECT_LE(reads.load(), 4 + 3) << "one read per frame, not one per viewer";
}

}  // namespace
}  // namespace gpulse
