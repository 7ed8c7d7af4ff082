// The agent over a fake backend: scrapes share a watch's fresh reading (the device is asked only
// for what no watch read just now), watches tick on the simulated clock, and the API answers
// through Handle as the HTTP server calls it.
#include "agent/agent.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <nlohmann/json.hpp>

namespace gpulse::agent {
namespace {

using nlohmann::json;

// One simulated GPU whose power is the simulated second; counts what it is asked for.
class FakeBackend final : public gpu::Backend {
 public:
  FakeBackend() {
    info_.backend = "fake";
    info_.simulated = true;
    info_.scenario = "fake";
    DeviceInfo d;
    d.uuid = "GPU-fake";
    info_.devices.push_back(d);
  }
  const SystemInfo& info() const override { return info_; }
  void Read(std::size_t, std::span<const FieldIndex> fields, Sample& out) override {
    out.values.assign(AllFields().size(), std::nullopt);
    out.unsupported.assign(AllFields().size(), false);
    out.state = DeviceState::kOk;
    for (FieldIndex f : fields) {
      asked.push_back(FieldAt(f).id);
      out.values[f] = seconds;
    }
  }
  const gpu::ReadStats& stats() const override { return stats_; }
  bool SetSimulatedClock(double s) override {
    seconds = s;
    return true;
  }
  std::vector<int> asked;
  double seconds = 0;

 private:
  SystemInfo info_;
  gpu::ReadStats stats_;
};

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/gpulse-agent-test-XXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
    AgentOptions o;
    o.state_dir = dir_ + "/state";
    o.simulated_clock_s = 0;
    o.min_refresh_ms = 500;
    auto a = Agent::Create(o, backend_);
    ASSERT_TRUE(a.ok()) << a.error().message;
    agent_ = std::move(a).value();
    Status started = agent_->Start();
    ASSERT_TRUE(started.ok()) << started.error().message;
  }

  // One request through Handle, as the server makes it (from the unix socket unless `tcp`); the
  // answer's status and JSON body.
  std::pair<int, json> Call(const std::string& method, const std::string& path,
                            const json& body = nullptr, bool tcp = false) {
    net::HttpRequest req;
    if (!tcp) {
      req.peer = net::PeerCredentials{static_cast<std::uint32_t>(getpid()), getuid(), getgid()};
    }
    req.method = method;
    req.target = path;
    req.path = path.substr(0, path.find('?'));
    if (!body.is_null()) req.body = body.dump();
    std::promise<net::HttpResponse> answer;
    net::Respond respond = [&answer](net::HttpResponse r) { answer.set_value(std::move(r)); };
    EXPECT_TRUE(agent_->Handle(req, respond));
    net::HttpResponse r = answer.get_future().get();
    return {r.status, json::parse(r.body, nullptr, false)};
  }

  FakeBackend backend_;
  std::string dir_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentTest, AScrapeSharesTheWatchsFreshReadingAndReadsTheRest) {
  auto [status, watch] = Call("POST", "/api/v1/watches", {{"fields", "155"}, {"update_ms", 1000}});
  ASSERT_EQ(status, 201) << watch.dump();
  auto [s2, clock] = Call("POST", "/api/v1/clock", {{"advance_s", 3}});
  ASSERT_EQ(s2, 200) << clock.dump();
  EXPECT_EQ(clock["ticks"], 3);
  EXPECT_EQ(backend_.asked, (std::vector<int>{155, 155, 155})) << "one read per tick";
  backend_.asked.clear();
  const FieldIndex power = *IndexOf(155), temp = *IndexOf(150);
  auto snap = agent_->Read(std::vector<FieldIndex>{power, temp}, false);
  ASSERT_NE(snap, nullptr);
  EXPECT_EQ(backend_.asked, (std::vector<int>{150})) << "power came from the watch's tick at 3 s";
  EXPECT_EQ(snap->entities.at(0).sample.values[power], 3.0);
  EXPECT_EQ(snap->entities.at(0).sample.values[temp], 3.0);
}

TEST_F(AgentTest, AStaleWatchReadingIsReadAgain) {
  ASSERT_EQ(Call("POST", "/api/v1/watches", {{"fields", "155"}, {"update_ms", 2000}}).first, 201);
  ASSERT_EQ(Call("POST", "/api/v1/clock", {{"advance_s", 3}}).first, 200);  // last tick at 2 s
  backend_.asked.clear();
  agent_->Read(std::vector<FieldIndex>{*IndexOf(155)}, false);
  EXPECT_EQ(backend_.asked, (std::vector<int>{155})) << "1 s old is older than min_refresh";
}

TEST_F(AgentTest, WrongMethodsAndPathsAreRefusedAsJson) {
  auto [s1, b1] = Call("PUT", "/api/v1/groups");
  EXPECT_EQ(s1, 405);
  EXPECT_TRUE(b1.contains("error")) << b1.dump();
  auto [s2, b2] = Call("GET", "/api/v1/nothing");
  EXPECT_EQ(s2, 404);
  auto [s3, b3] = Call("POST", "/api/v1/groups", {{"name", 7}});
  EXPECT_EQ(s3, 400) << b3.dump();
  net::HttpRequest other;
  other.path = "/metrics";
  net::Respond unused = [](net::HttpResponse) {};
  EXPECT_FALSE(agent_->Handle(other, unused)) << "not an API path: the exporter's";
}

TEST_F(AgentTest, ChangesOverTcpNeedAuthenticatedClients) {
  auto [status, body] = Call("POST", "/api/v1/groups", {{"name", "g"}}, /*tcp=*/true);
  EXPECT_EQ(status, 403);
  EXPECT_NE(body.value("error", "").find("basic auth"), std::string::npos) << body.dump();
  EXPECT_EQ(Call("GET", "/api/v1/groups", nullptr, /*tcp=*/true).first, 200) << "reads are fine";
  EXPECT_EQ(Call("POST", "/api/v1/groups", {{"name", "g"}}).first, 201) << "the socket may change";
}

TEST_F(AgentTest, AfterShutdownReadsAnswerNothingAndTheStateIsSaved) {
  ASSERT_EQ(Call("POST", "/api/v1/groups", {{"name", "g"}}).first, 201);
  agent_->Shutdown();
  EXPECT_EQ(agent_->Read(std::vector<FieldIndex>{*IndexOf(155)}, false), nullptr);
  agent_.reset();
  auto db = StateDb::Open(dir_ + "/state");
  ASSERT_TRUE(db.ok()) << db.error().message;
  EXPECT_EQ((*db)->Groups()->size(), 1u);
  EXPECT_EQ(*(*db)->Meta("clean_shutdown").value(), "1");
}

}  // namespace
}  // namespace gpulse::agent
