// Where the agent's socket goes when --socket is not given, and where the CLI looks for it
// (sys/runtime_dir.h; issue 40: `gpulse agent` exited at once on a machine without /run/gpulse).
// The "system" directory is a temp path here; one that cannot be made stands for /run/gpulse as an
// unprivileged user.
#include "sys/runtime_dir.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

namespace gpulse::sys {
namespace {

namespace fs = std::filesystem;

class RuntimeDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("gpulse-runtime-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_ / "xdg");
    const char* old = std::getenv("XDG_RUNTIME_DIR");
    if (old != nullptr) old_xdg_ = old;
    setenv("XDG_RUNTIME_DIR", (root_ / "xdg").c_str(), 1);
  }
  void TearDown() override {
    if (old_xdg_) {
      setenv("XDG_RUNTIME_DIR", old_xdg_->c_str(), 1);
    } else {
      unsetenv("XDG_RUNTIME_DIR");
    }
    fs::remove_all(root_);
  }
  // A system path whose directory cannot be made (as for a user who may not write /run).
  static std::string Unmakeable() { return "/proc/gpulse-no-such-dir/gpulse/agent.sock"; }
  std::string UserDir() const { return (root_ / "xdg" / "gpulse").string(); }
  static void Listen(const std::string& path) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    path.copy(a.sun_path, sizeof a.sun_path - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0) << path;
    close(fd);  // the socket file stays: FindAgentSocket looks for the file
  }

  fs::path root_;
  std::optional<std::string> old_xdg_;
};

TEST_F(RuntimeDir, AUsableSystemDirectoryIsChosen) {
  fs::create_directories(root_ / "run" / "gpulse");
  const std::string sys = (root_ / "run" / "gpulse" / "agent.sock").string();
  auto c = ChooseAgentSocket(sys);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->path, sys);
  EXPECT_EQ(c->why, "");
}

TEST_F(RuntimeDir, WithoutTheSystemDirectoryThePerUserDirectoryIsMadePrivate) {
  auto c = ChooseAgentSocket(Unmakeable());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->path, UserDir() + "/agent.sock");
  EXPECT_NE(c->why.find("/proc/gpulse-no-such-dir/gpulse is not writable by uid"), std::string::npos)
      << c->why;
  struct stat st {};
  ASSERT_EQ(lstat(UserDir().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(RuntimeDir, WithoutXdgRuntimeDirThePathIsUnderTmpByUid) {
  unsetenv("XDG_RUNTIME_DIR");
  EXPECT_EQ(UserAgentSocket(1234), "/tmp/gpulse-1234/agent.sock");
  setenv("XDG_RUNTIME_DIR", "relative/dir", 1);
  EXPECT_EQ(UserAgentSocket(1234), "/tmp/gpulse-1234/agent.sock") << "only an absolute directory";
}

TEST_F(RuntimeDir, APerUserDirectoryOthersCanWriteOrALinkIsRefused) {
  fs::create_directories(UserDir());
  chmod(UserDir().c_str(), 0777);
  auto open = ChooseAgentSocket(Unmakeable());
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.error().message.find("is writable by others (mode 777"), std::string::npos)
      << open.error().message;
  fs::remove(UserDir());
  fs::create_directories(root_ / "elsewhere");
  fs::create_directory_symlink(root_ / "elsewhere", UserDir());
  auto link = ChooseAgentSocket(Unmakeable());
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.error().message.find("is not a directory"), std::string::npos)
      << link.error().message;
  EXPECT_NE(link.error().message.find("--socket"), std::string::npos);
}

TEST_F(RuntimeDir, TheCliLooksAtTheSystemSocketThenThePerUserOne) {
  fs::create_directories(root_ / "run");
  const std::string sys = (root_ / "run" / "agent.sock").string();
  EXPECT_EQ(FindAgentSocket(sys), sys) << "nothing anywhere: the system path, for the error";
  fs::create_directories(UserDir());
  Listen(UserDir() + "/agent.sock");
  EXPECT_EQ(FindAgentSocket(sys), UserDir() + "/agent.sock");
  Listen(sys);
  EXPECT_EQ(FindAgentSocket(sys), sys) << "the system socket first";
}

}  // namespace
}  // namespace gpulse::sys
