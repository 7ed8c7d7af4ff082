// sys::Dir (src/sys/safe_dir.h): every file gpulse writes in its trees is opened relative to a
// directory descriptor, a symbolic link anywhere below a root is refused with its full path and
// never followed, files are created with one mode whatever the umask, and reads neither follow a
// link nor block on a FIFO.
#include "sys/safe_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace gpulse::sys {
namespace {
namespace fs = std::filesystem;

class SafeDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpulse-safe-dir-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    outside_ = root_ / "outside";
    fs::create_directories(outside_);
    Write(outside_ / "precious.txt", "precious\n");
    old_umask_ = ::umask(077);  // the mode of every file must not depend on it
  }
  void TearDown() override {
    ::umask(old_umask_);
    fs::remove_all(root_);
  }

  static void Write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  static std::string Read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static mode_t ModeOf(const fs::path& p) {
    struct stat st {};
    EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
    return st.st_mode & 07777;
  }
  Dir Tree() {
    auto d = Dir::OpenRoot(root_ / "tree", true);
    EXPECT_TRUE(d.ok()) << d.error().message;
    return *d;
  }
  // The planted link is refused with its path, and what it points at is untouched.
  void ExpectRefusedLink(const Error& e, const fs::path& link) {
    EXPECT_EQ(e.code, ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message.find(link.string() + " is a symbolic link"), std::string::npos)
        << e.message;
    EXPECT_EQ(Read(outside_ / "precious.txt"), "precious\n");
  }

  fs::path root_, outside_;
  mode_t old_umask_ = 022;
};

TEST_F(SafeDir, RootIsCreatedComponentByComponentAndAUserSymlinkedRootIsFollowed) {
  auto d = Dir::OpenRoot(root_ / "a" / "b" / "c/", true);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_TRUE(fs::is_directory(root_ / "a" / "b" / "c"));
  fs::create_directory_symlink(outside_, root_ / "scratch");  // the user named it: their choice
  auto linked = Dir::OpenRoot(root_ / "scratch", false);
  ASSERT_TRUE(linked.ok()) << linked.error().message;
  EXPECT_EQ(*linked->TypeOf("precious.txt"), EntryType::kRegular);
  auto missing = Dir::OpenRoot(root_ / "nope", false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  Write(root_ / "file", "x");
  auto file = Dir::OpenRoot(root_ / "file", true);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message.find("is not a directory"), std::string::npos);
}

TEST_F(SafeDir, SubRefusesASymlinkedComponentWithItsFullPath) {
  Dir tree = Tree();
  fs::create_directory_symlink(outside_, root_ / "tree" / "power");
  for (const char* rel : {"power", "power/windows"}) {
    for (bool create : {false, true}) {
      auto d = tree.Sub(rel, create);
      ASSERT_FALSE(d.ok()) << rel;
      ExpectRefusedLink(d.error(), root_ / "tree" / "power");
    }
  }
  EXPECT_FALSE(fs::exists(outside_ / "windows")) << "nothing is created through the link";
  fs::create_directories(root_ / "tree" / "a");
  fs::create_directory_symlink(outside_, root_ / "tree" / "a" / "b");
  auto deep = tree.Sub("a/b/c", true);
  ASSERT_FALSE(deep.ok());
  ExpectRefusedLink(deep.error(), root_ / "tree" / "a" / "b");
}

TEST_F(SafeDir, SubCreatesMissingComponentsAndRefusesFilesDotDotAndAbsolutePaths) {
  Dir tree = Tree();
  auto d = tree.Sub("./x/y", true);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->path(), root_ / "tree" / "x" / "y");
  EXPECT_TRUE(fs::is_directory(root_ / "tree" / "x" / "y"));
  auto missing = tree.Sub("q", false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  Write(root_ / "tree" / "f", "x");
  auto file = tree.Sub("f/g", true);
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message.find((root_ / "tree" / "f").string() + " is not a directory"),
            std::string::npos)
      << file.error().message;
  EXPECT_FALSE(tree.Sub("x/../..", false).ok());
  EXPECT_FALSE(tree.Sub("/etc", false).ok());
}

TEST_F(SafeDir, OpenNoFollowRefusesALinkAsTheLastComponentOnly) {
  fs::create_directories(root_ / "pkg");
  fs::create_directory_symlink(outside_, root_ / "pkg" / "windows");
  auto d = Dir::OpenNoFollow(root_ / "pkg" / "windows/", false);
  ASSERT_FALSE(d.ok());
  ExpectRefusedLink(d.error(), root_ / "pkg" / "windows");
  fs::create_directory_symlink(root_ / "pkg", root_ / "pkg-link");  // a root above: followed
  fs::remove(root_ / "pkg" / "windows");
  fs::create_directories(root_ / "pkg" / "windows");
  auto ok = Dir::OpenNoFollow(root_ / "pkg-link" / "windows", false);
  EXPECT_TRUE(ok.ok()) << ok.error().message;
}

TEST_F(SafeDir, CreateNewMakesA0644FileAndNeverTouchesAnExistingOne) {
  Dir tree = Tree();
  auto f = tree.OpenFile("samples.csv", OpenMode::kCreateNew);
  ASSERT_TRUE(f.ok()) << f.error().message;
  ASSERT_TRUE(WriteAllTo((*f)->get(), "header\n", "samples.csv").ok());
  EXPECT_EQ(ModeOf(root_ / "tree" / "samples.csv"), 0644u) << "under umask 077";
  auto again = tree.OpenFile("samples.csv", OpenMode::kCreateNew);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("already exists"), std::string::npos);
  EXPECT_EQ(Read(root_ / "tree" / "samples.csv"), "header\n") << "nothing recorded is lost";
  fs::create_symlink(outside_ / "precious.txt", root_ / "tree" / "timings.jsonl");
  auto link = tree.OpenFile("timings.jsonl", OpenMode::kCreateNew);
  ASSERT_FALSE(link.ok());
  ExpectRefusedLink(link.error(), root_ / "tree" / "timings.jsonl");
  fs::create_symlink(outside_ / "not-there", root_ / "tree" / "dangling");
  auto dangling = tree.OpenFile("dangling", OpenMode::kCreateNew);
  ASSERT_FALSE(dangling.ok());
  ExpectRefusedLink(dangling.error(), root_ / "tree" / "dangling");
  EXPECT_FALSE(fs::exists(outside_ / "not-there")) << "a dangling link is not created through";
}

TEST_F(SafeDir, AppendAndTruncateOpenOnlyRegularFiles) {
  Dir tree = Tree();
  Write(root_ / "tree" / "log.out", "old\n");
  {
    auto f = tree.OpenFile("log.out", OpenMode::kAppend);
    ASSERT_TRUE(f.ok()) << f.error().message;
    ASSERT_TRUE(WriteAllTo((*f)->get(), "new\n", "log.out").ok());
  }
  EXPECT_EQ(Read(root_ / "tree" / "log.out"), "old\nnew\n");
  {
    auto f = tree.OpenFile("log.out", OpenMode::kTruncate);
    ASSERT_TRUE(f.ok()) << f.error().message;
    ASSERT_TRUE(WriteAllTo((*f)->get(), "fresh\n", "log.out").ok());
  }
  EXPECT_EQ(Read(root_ / "tree" / "log.out"), "fresh\n");
  auto created = tree.OpenFile("created.out", OpenMode::kAppend);
  ASSERT_TRUE(created.ok());
  EXPECT_EQ(ModeOf(root_ / "tree" / "created.out"), 0644u);
  fs::create_symlink(outside_ / "precious.txt", root_ / "tree" / "link.out");
  ASSERT_EQ(::mkfifo((root_ / "tree" / "fifo.out").c_str(), 0644), 0);
  for (OpenMode mode : {OpenMode::kAppend, OpenMode::kTruncate}) {
    auto link = tree.OpenFile("link.out", mode);
    ASSERT_FALSE(link.ok());
    ExpectRefusedLink(link.error(), root_ / "tree" / "link.out");
    auto fifo = tree.OpenFile("fifo.out", mode);  // no reader: must fail, not block
    ASSERT_FALSE(fifo.ok());
    EXPECT_NE(fifo.error().message.find("fifo.out is not a regular file"), std::string::npos)
        << fifo.error().message;
  }
}

TEST_F(SafeDir, WriteAtomicReplacesWholeWithOneModeAndRefusesALink) {
  Dir tree = Tree();
  Write(root_ / "tree" / "manifest.json", "old");
  ::chmod((root_ / "tree" / "manifest.json").c_str(), 0600);
  ASSERT_TRUE(tree.WriteAtomic("manifest.json", "new\n").ok());
  EXPECT_EQ(Read(root_ / "tree" / "manifest.json"), "new\n");
  EXPECT_EQ(ModeOf(root_ / "tree" / "manifest.json"), 0644u);
  fs::create_symlink(outside_ / "precious.txt", root_ / "tree" / "run.json");
  Status s = tree.WriteAtomic("run.json", "evil\n");
  ASSERT_FALSE(s.ok());
  ExpectRefusedLink(s.error(), root_ / "tree" / "run.json");
  EXPECT_TRUE(fs::is_symlink(root_ / "tree" / "run.json")) << "refused, not replaced";
  Status failed = tree.WriteAtomic("report.txt", [](int fd) -> Status {
    (void)WriteAllTo(fd, "partial", "report.txt");
    return Error{ErrorCode::kIo, "disk full"};
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "disk full");
  auto names = tree.List();
  ASSERT_TRUE(names.ok());
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"manifest.json", "run.json"}))
      << "no temp file outlives a failure, and a failed write leaves no target";
}

TEST_F(SafeDir, ReadFileRefusesLinksFifosAndOversizedFilesWithoutBlocking) {
  Dir tree = Tree();
  Write(root_ / "tree" / "state.json", "{}");
  auto ok = tree.ReadFile("state.json", 16);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(*ok, "{}");
  fs::create_symlink(outside_ / "precious.txt", root_ / "tree" / "link.json");
  auto link = tree.ReadFile("link.json", 1024);
  ASSERT_FALSE(link.ok());
  ExpectRefusedLink(link.error(), root_ / "tree" / "link.json");
  ASSERT_EQ(::mkfifo((root_ / "tree" / "fifo.json").c_str(), 0644), 0);
  auto fifo = tree.ReadFile("fifo.json", 1024);
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.error().message.find("is not a regular file"), std::string::npos);
  auto big = tree.ReadFile("state.json", 1);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("2 bytes, more than the 1"), std::string::npos);
  auto missing = tree.ReadFile("nope.json", 16);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST_F(SafeDir, TypeChecksRemoveAndNames) {
  Dir tree = Tree();
  Write(root_ / "tree" / "f", "x");
  fs::create_directories(root_ / "tree" / "d");
  fs::create_symlink("f", root_ / "tree" / "l");
  EXPECT_EQ(*tree.TypeOf("f"), EntryType::kRegular);
  EXPECT_EQ(*tree.TypeOf("d"), EntryType::kDirectory);
  EXPECT_EQ(*tree.TypeOf("l"), EntryType::kSymlink);
  EXPECT_EQ(*tree.TypeOf("missing"), EntryType::kMissing);
  EXPECT_TRUE(tree.RefuseNonRegular("f").ok());
  EXPECT_TRUE(tree.RefuseNonRegular("missing").ok());
  EXPECT_NE(tree.RefuseNonRegular("l").error().message.find("is a symbolic link"),
            std::string::npos);
  EXPECT_NE(tree.RefuseNonRegular("d").error().message.find("is not a regular file"),
            std::string::npos);
  for (const char* bad : {"", ".", "..", "a/b"}) {
    EXPECT_FALSE(tree.TypeOf(bad).ok()) << bad;
    EXPECT_FALSE(tree.OpenFile(bad, OpenMode::kCreateNew).ok()) << bad;
  }
  ASSERT_TRUE(tree.Remove("l").ok());
  EXPECT_TRUE(fs::exists(root_ / "tree" / "f")) << "removing a link removes the link only";
  EXPECT_TRUE(tree.Remove("missing").ok());
  auto parent = Dir::OpenParent(root_ / "tree" / "f");
  ASSERT_TRUE(parent.ok());
  EXPECT_EQ(parent->second, "f");
  EXPECT_EQ(parent->first.PathOf("f"), (root_ / "tree" / "f").string());
  EXPECT_FALSE(Dir::OpenParent(root_ / "tree" / "").ok());
}

}  // namespace
}  // namespace gpulse::sys
