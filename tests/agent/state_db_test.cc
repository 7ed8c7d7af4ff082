// The agent's state database: rows and id numbering, reopening, the directory lock, durability
// across kill -9, and the files Open refuses (left byte for byte as they were).
#include "agent/state_db.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace gpulse::agent {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSqliteCli = "/usr/bin/sqlite3";

class StateDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/gpulse-state-db-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/state";
    db_path_ = dir_ + "/agent.db";
  }
  void TearDown() override {
    std::error_code ec;
    if (!root_.empty()) fs::remove_all(root_, ec);
  }

  std::unique_ptr<StateDb> OpenOk() {
    auto db = StateDb::Open(dir_);
    EXPECT_TRUE(db.ok()) << db.error().message;
    return db.ok() ? std::move(*db) : nullptr;
  }

  // Open must refuse; returns the message.
  std::string OpenRefused(ErrorCode code = ErrorCode::kInvalidArgument) {
    auto db = StateDb::Open(dir_);
    EXPECT_FALSE(db.ok()) << "Open accepted " << db_path_;
    if (db.ok()) return "";
    EXPECT_EQ(db.error().code, code) << db.error().message;
    return db.error().message;
  }

  static std::string ReadBytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  static void WriteBytes(const std::string& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }

  // Runs the sqlite3 command-line tool on `file` with `args` (SQL or dot-commands), each passed
  // in single quotes: none may contain one.
  static bool Cli(const std::string& file, const std::vector<std::string>& args) {
    std::string cmd = std::string(kSqliteCli) + " '" + file + "'";
    for (const std::string& a : args) cmd += " '" + a + "'";
    cmd += " >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
  }

  std::string root_;
  std::string dir_;
  std::string db_path_;
};

bool HaveSqliteCli() { return ::access(kSqliteCli, X_OK) == 0; }

std::uint32_t BigEndian32(const std::string& bytes, std::size_t offset) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(bytes[offset + i]);
  return v;
}

// Compares without printing the bytes (a database is too long to read in a failure message).
void ExpectUnchanged(const std::string& path, const std::string& before) {
  std::ifstream in(path, std::ios::binary);
  const std::string now{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_TRUE(now == before) << path << " changed: " << before.size() << " bytes before, "
                             << now.size() << " now";
}

mode_t ModeOf(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

TEST_F(StateDbTest, CreatesDirectoriesAndFilesWithExactModes) {
  dir_ = root_ + "/a/b/state";
  db_path_ = dir_ + "/agent.db";
  const mode_t old_umask = ::umask(077);  // the modes must not come from the umask
  auto db = OpenOk();
  ::umask(old_umask);
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(db->path(), db_path_);
  EXPECT_EQ(ModeOf(root_ + "/a"), 0750u);
  EXPECT_EQ(ModeOf(root_ + "/a/b"), 0750u);
  EXPECT_EQ(ModeOf(dir_), 0750u);
  EXPECT_EQ(ModeOf(db_path_), 0640u);
  EXPECT_EQ(ModeOf(dir_ + "/agent.lock"), 0640u);
  db.reset();

  // The header: SQLite's magic, WAL (file format versions 2), gpulse's application_id, schema 1.
  const std::string head = ReadBytes(db_path_).substr(0, 100);
  ASSERT_EQ(head.size(), 100u);
  EXPECT_EQ(head.substr(0, 16), std::string("SQLite format 3\0", 16));
  EXPECT_EQ(head[18], 2);
  EXPECT_EQ(head[19], 2);
  EXPECT_EQ(BigEndian32(head, 60), static_cast<std::uint32_t>(kSchemaVersion));
  EXPECT_EQ(BigEndian32(head, 68), kApplicationId);
}

TEST_F(StateDbTest, AStateDirectoryReachedThroughASymbolicLinkOpens) {
  fs::create_directories(root_ + "/real");
  fs::create_symlink(root_ + "/real", root_ + "/link");
  dir_ = root_ + "/link";
  auto db = OpenOk();  // SQLite's NOFOLLOW refused the link: "unable to open database file"
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(db->path(), root_ + "/real/agent.db");
  ASSERT_TRUE(db->CreateGroup("g", 1).ok());
  db.reset();
  auto again = OpenOk();
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(fs::exists(root_ + "/real/agent.db"));
}

TEST_F(StateDbTest, GroupIdsStartAtTwoAndAreNeverReused) {
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  auto a = db->CreateGroup("a", 100);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->id, 2);
  EXPECT_EQ(a->name, "a");
  EXPECT_EQ(a->created_unix_ns, 100);
  EXPECT_TRUE(a->entities.empty());
  auto b = db->CreateGroup("b", 200);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->id, 3);

  auto dup = db->CreateGroup("a", 300);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(dup.error().message, "a group named \"a\" exists (id 2)");

  ASSERT_TRUE(db->DeleteGroup(3).ok());
  auto c = db->CreateGroup("c", 400);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->id, 4) << "neither the deleted id 3 nor the refused duplicate takes a number";

  // The highest id deleted, then a reopen: still not reused (not max(id) + 1).
  ASSERT_TRUE(db->DeleteGroup(4).ok());
  db.reset();
  db = OpenOk();
  ASSERT_NE(db, nullptr);
  auto d = db->CreateGroup("b", 500);  // a deleted group's name is free again
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->id, 5);

  auto groups = db->Groups();
  ASSERT_TRUE(groups.ok()) << groups.error().message;
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].id, 2);
  EXPECT_EQ((*groups)[0].name, "a");
  EXPECT_EQ((*groups)[1].id, 5);
  EXPECT_EQ((*groups)[1].name, "b");
  EXPECT_EQ((*groups)[1].created_unix_ns, 500);
}

TEST_F(StateDbTest, GroupEntitiesKeepTheirOrderAndAreReplaced) {
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->CreateGroup("g", 1).ok());
  ASSERT_TRUE(db->CreateGroup("h", 1).ok());
  const std::vector<std::string> first = {"gpu:3", "gpu:0", "gpu:1/gi:2", "gpu:0"};
  ASSERT_TRUE(db->SetGroupEntities(2, first).ok());
  ASSERT_TRUE(db->SetGroupEntities(3, {"gpu:7"}).ok());
  auto groups = db->Groups();
  ASSERT_TRUE(groups.ok()) << groups.error().message;
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].entities, first);
  EXPECT_EQ((*groups)[1].entities, std::vector<std::string>{"gpu:7"});

  ASSERT_TRUE(db->SetGroupEntities(2, {"gpu:1"}).ok());
  groups = db->Groups();
  ASSERT_TRUE(groups.ok());
  EXPECT_EQ((*groups)[0].entities, std::vector<std::string>{"gpu:1"});
  ASSERT_TRUE(db->SetGroupEntities(2, {}).ok());
  groups = db->Groups();
  ASSERT_TRUE(groups.ok());
  EXPECT_TRUE((*groups)[0].entities.empty());
  EXPECT_EQ((*groups)[1].entities, std::vector<std::string>{"gpu:7"});
}

TEST_F(StateDbTest, MissingGroupsAreNotFound) {
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  Status set = db->SetGroupEntities(9, {"gpu:0"});
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(set.error().message, "no group 9");
  Status del = db->DeleteGroup(9);
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(del.error().code, ErrorCode::kNotFound);
  EXPECT_EQ(del.error().message, "no group 9");
  EXPECT_FALSE(db->DeleteGroup(0).ok()) << "the default group is virtual: never a row";
}

TEST_F(StateDbTest, WatchesOnTheDefaultAndAUserGroupGoWithTheirGroup) {
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  ASSERT_TRUE(db->CreateGroup("g", 1).ok());
  WatchRow w0;
  w0.group_id = 0;
  w0.field_ids = {150, 155, 1001};
  w0.update_ms = 1000;
  w0.keep_age_s = 3600;
  w0.created_unix_ns = 42;
  auto a = db->AddWatch(w0);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->id, 1);
  WatchRow w2 = w0;
  w2.group_id = 2;
  w2.field_ids = {203};
  auto b = db->AddWatch(w2);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b->id, 2);
  WatchRow orphan = w0;
  orphan.group_id = 7;
  auto c = db->AddWatch(orphan);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code, ErrorCode::kNotFound);

  auto watches = db->Watches();
  ASSERT_TRUE(watches.ok()) << watches.error().message;
  ASSERT_EQ(watches->size(), 2u);
  EXPECT_EQ((*watches)[0].id, 1);
  EXPECT_EQ((*watches)[0].group_id, 0);
  EXPECT_EQ((*watches)[0].field_ids, (std::vector<int>{150, 155, 1001}));
  EXPECT_EQ((*watches)[0].update_ms, 1000);
  EXPECT_EQ((*watches)[0].keep_age_s, 3600);
  EXPECT_EQ((*watches)[0].created_unix_ns, 42);
  EXPECT_EQ((*watches)[1].group_id, 2);
  EXPECT_EQ((*watches)[1].field_ids, std::vector<int>{203});

  ASSERT_TRUE(db->DeleteGroup(2).ok());
  watches = db->Watches();
  ASSERT_TRUE(watches.ok());
  ASSERT_EQ(watches->size(), 1u) << "the group's watch goes with it; group 0's stays";
  EXPECT_EQ((*watches)[0].id, 1);

  ASSERT_TRUE(db->DeleteWatch(1).ok());
  Status again = db->DeleteWatch(1);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, ErrorCode::kNotFound);

  db.reset();
  db = OpenOk();
  ASSERT_NE(db, nullptr);
  WatchRow empty;
  auto d = db->AddWatch(empty);
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->id, 3) << "watch ids are never reused, across a reopen too";
  watches = db->Watches();
  ASSERT_TRUE(watches.ok()) << watches.error().message;
  ASSERT_EQ(watches->size(), 1u);
  EXPECT_TRUE((*watches)[0].field_ids.empty());
}

TEST_F(StateDbTest, JobsStartPutGetListDelete) {
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  JobRow j1;
  j1.id = "train-1";
  j1.group_id = 0;
  j1.start_unix_ns = 1'000;
  ASSERT_TRUE(db->StartJob(j1).ok());
  Status dup = db->StartJob(j1);
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(dup.error().message, "job \"train-1\" exists");

  auto got = db->Job("train-1");
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->group_id, 0);
  EXPECT_EQ((*got)->start_unix_ns, 1'000);
  EXPECT_FALSE((*got)->stop_unix_ns.has_value());
  EXPECT_EQ((*got)->stats_json, "");
  EXPECT_TRUE((*got)->notes.empty());

  ASSERT_TRUE(db->CreateGroup("g", 1).ok());
  JobRow j2;
  j2.id = "eval \"two\"";
  j2.group_id = 2;
  j2.start_unix_ns = 500;
  ASSERT_TRUE(db->StartJob(j2).ok());

  j1.stop_unix_ns = 9'000;
  j1.stats_json = R"({"gpus":[{"energy_j":12.5}]})";
  j1.notes = {"the agent was down from T1 to T2: no samples then", "quote \" backslash \\ é"};
  ASSERT_TRUE(db->PutJob(j1).ok());
  got = db->Job("train-1");
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->stop_unix_ns, std::optional<std::int64_t>(9'000));
  EXPECT_EQ((*got)->stats_json, j1.stats_json);
  EXPECT_EQ((*got)->notes, j1.notes);

  JobRow ghost;
  ghost.id = "ghost";
  Status put = db->PutJob(ghost);
  ASSERT_FALSE(put.ok());
  EXPECT_EQ(put.error().code, ErrorCode::kNotFound);
  auto none = db->Job("ghost");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_FALSE(none->has_value());

  ASSERT_TRUE(db->DeleteGroup(2).ok());
  auto jobs = db->Jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.error().message;
  ASSERT_EQ(jobs->size(), 2u) << "a job is a record: deleting its group keeps it";
  EXPECT_EQ((*jobs)[0].id, "eval \"two\"");  // by start time
  EXPECT_EQ((*jobs)[0].group_id, 2);
  EXPECT_EQ((*jobs)[1].id, "train-1");

  ASSERT_TRUE(db->DeleteJob("train-1").ok());
  Status del = db->DeleteJob("train-1");
  ASSERT_FALSE(del.ok());
  EXPECT_EQ(del.error().code, ErrorCode::kNotFound);
  jobs = db->Jobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), 1u);
}

TEST_F(StateDbTest, HistoryRoundTripsBinaryImagesAndIsReplacedWhole) {
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  std::string big;
  for (int i = 0; i < 300'000; ++i) big.push_back(static_cast<char>(i * 7));  // NULs, 0xff, ...
  const std::vector<HistoryBlob> first = {
      {"gpu:0", 150, std::string("\0\x01\0\xff\0", 5)},
      {"gpu:0", 155, big},
      {"gpu:1/gi:2", 150, ""},
  };
  ASSERT_TRUE(db->SaveHistory(first).ok());
  auto loaded = db->LoadHistory();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_EQ(loaded->size(), 3u);
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ((*loaded)[i].entity, first[i].entity);
    EXPECT_EQ((*loaded)[i].field_id, first[i].field_id);
    EXPECT_EQ((*loaded)[i].image, first[i].image) << "image " << i;
  }

  // Two series with one key: refused, and the transaction leaves the stored history as it was.
  Status twice = db->SaveHistory({{"gpu:5", 1, "x"}, {"gpu:5", 1, "y"}});
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code, ErrorCode::kInvalidArgument);
  loaded = db->LoadHistory();
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->size(), 3u);

  ASSERT_TRUE(db->SaveHistory({{"gpu:2", 203, "z"}}).ok());
  db.reset();
  db = OpenOk();
  ASSERT_NE(db, nullptr);
  loaded = db->LoadHistory();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  ASSERT_EQ(loaded->size(), 1u) << "SaveHistory replaces every stored series";
  EXPECT_EQ((*loaded)[0].entity, "gpu:2");
  EXPECT_EQ((*loaded)[0].image, "z");
}

TEST_F(StateDbTest, MetaPutsAndReplaces) {
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  auto none = db->Meta("last_clean_shutdown_unix_ns");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_FALSE(none->has_value());
  ASSERT_TRUE(db->PutMeta("last_clean_shutdown_unix_ns", "1").ok());
  ASSERT_TRUE(db->PutMeta("last_clean_shutdown_unix_ns", "2").ok());
  ASSERT_TRUE(db->PutMeta("empty", "").ok());
  auto v = db->Meta("last_clean_shutdown_unix_ns");
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(*v, std::optional<std::string>("2"));
  auto e = db->Meta("empty");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, std::optional<std::string>(""));
}

TEST_F(StateDbTest, ReopenKeepsEverything) {
  {
    auto db = OpenOk();
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->CreateGroup("g", 7).ok());
    ASSERT_TRUE(db->SetGroupEntities(2, {"gpu:0", "gpu:1"}).ok());
    WatchRow w;
    w.group_id = 2;
    w.field_ids = {150};
    w.update_ms = 100;
    ASSERT_TRUE(db->AddWatch(w).ok());
    JobRow j;
    j.id = "j";
    j.group_id = 2;
    j.start_unix_ns = 5;
    j.notes = {"n"};
    ASSERT_TRUE(db->StartJob(j).ok());
    ASSERT_TRUE(db->SaveHistory({{"gpu:0", 150, std::string(3, '\0')}}).ok());
    ASSERT_TRUE(db->PutMeta("k", "v").ok());
  }
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  auto groups = db->Groups();
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].name, "g");
  EXPECT_EQ((*groups)[0].created_unix_ns, 7);
  EXPECT_EQ((*groups)[0].entities, (std::vector<std::string>{"gpu:0", "gpu:1"}));
  auto watches = db->Watches();
  ASSERT_TRUE(watches.ok());
  ASSERT_EQ(watches->size(), 1u);
  EXPECT_EQ((*watches)[0].update_ms, 100);
  auto job = db->Job("j");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(job->has_value());
  EXPECT_EQ((*job)->notes, std::vector<std::string>{"n"});
  auto history = db->LoadHistory();
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].image, std::string(3, '\0'));
  auto meta = db->Meta("k");
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(*meta, std::optional<std::string>("v"));
}

TEST_F(StateDbTest, OversizedAndMalformedValuesAreRefused) {
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  EXPECT_TRUE(db->CreateGroup(std::string(4096, 'n'), 1).ok());
  auto big = db->CreateGroup(std::string(4097, 'n'), 1);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code, ErrorCode::kInvalidArgument);
  JobRow j;
  j.id = std::string(5000, 'j');
  Status st = db->StartJob(j);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  JobRow bad_note;
  bad_note.id = "n";
  bad_note.notes = {"\xff\xfe not UTF-8"};
  st = db->StartJob(bad_note);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(st.error().message, "a job note is not valid UTF-8");
  EXPECT_FALSE(db->PutMeta(std::string(4097, 'k'), "v").ok());
  EXPECT_FALSE(db->SetGroupEntities(2, {std::string(4097, 'e')}).ok());
}

TEST_F(StateDbTest, ASecondOpenOfTheDirectoryIsRefusedWhileTheFirstHoldsIt) {
  auto first = OpenOk();
  ASSERT_NE(first, nullptr);
  std::string msg = OpenRefused(ErrorCode::kUnavailable);
  EXPECT_EQ(msg, "another gpulse agent holds " + dir_ + " (lock " + dir_ + "/agent.lock)");
  first.reset();
  EXPECT_NE(OpenOk(), nullptr) << "closing releases the lock";
}

TEST_F(StateDbTest, RefusesATextFileAndLeavesIt) {
  fs::create_directories(dir_);
  const std::string text = "these are my notes, not a database\n";
  WriteBytes(db_path_, text);
  std::string msg = OpenRefused();
  EXPECT_EQ(msg, db_path_ +
                     " is not an SQLite database; refusing to overwrite it (move it away to start "
                     "afresh)");
  ExpectUnchanged(db_path_, text);
  EXPECT_FALSE(fs::exists(db_path_ + "-wal"));

  WriteBytes(db_path_, "SQLite");  // shorter than the header
  OpenRefused();
  EXPECT_EQ(ReadBytes(db_path_), "SQLite");
}

TEST_F(StateDbTest, RefusesASymbolicLinkInPlaceOfTheDatabase) {
  fs::create_directories(dir_);
  const std::string target = root_ + "/elsewhere.db";
  WriteBytes(target, "x");
  fs::create_symlink(target, db_path_);
  std::string msg = OpenRefused();
  EXPECT_NE(msg.find("symbolic link"), std::string::npos) << msg;
  EXPECT_EQ(ReadBytes(target), "x");
}

TEST_F(StateDbTest, RefusesAnotherProgramsDatabaseAndLeavesIt) {
  if (!HaveSqliteCli()) GTEST_SKIP() << kSqliteCli << " is not installed";
  fs::create_directories(dir_);
  ASSERT_TRUE(Cli(db_path_, {"create table t(x); insert into t values (1);"}));
  std::string before = ReadBytes(db_path_);
  std::string msg = OpenRefused();
  EXPECT_EQ(msg, db_path_ +
                     " belongs to another program (application_id 0x00000000); refusing to use it");
  ExpectUnchanged(db_path_, before);

  // One with an application_id of its own, in WAL mode, its last change still in its WAL (its
  // writer did not checkpoint on close): a read-write connection would checkpoint that into the
  // file when it closed.
  fs::remove(db_path_);
  ASSERT_TRUE(Cli(db_path_, {".dbconfig no_ckpt_on_close on",
                             "pragma application_id=42; pragma journal_mode=wal; "
                             "create table t(x); insert into t values (2);"}));
  ASSERT_GT(fs::file_size(db_path_ + "-wal"), 0u);
  before = ReadBytes(db_path_);
  const std::string wal_before = ReadBytes(db_path_ + "-wal");
  msg = OpenRefused();
  EXPECT_NE(msg.find("belongs to another program (application_id 0x0000002a)"), std::string::npos)
      << msg;
  ExpectUnchanged(db_path_, before);
  ExpectUnchanged(db_path_ + "-wal", wal_before);
}

TEST_F(StateDbTest, RefusesADatabaseOfANewerSchema) {
  if (!HaveSqliteCli()) GTEST_SKIP() << kSqliteCli << " is not installed";
  fs::create_directories(dir_);
  ASSERT_TRUE(Cli(db_path_, {"pragma application_id=" + std::to_string(kApplicationId) +
                             "; pragma user_version=99; create table t(x);"}));
  const std::string before = ReadBytes(db_path_);
  std::string msg = OpenRefused();
  EXPECT_EQ(msg, db_path_ + " was written by a newer gpulse (schema 99, this one reads up to " +
                     std::to_string(kSchemaVersion) + ")");
  ExpectUnchanged(db_path_, before);
}

// A database an older gpulse wrote (schema 1: no management table) is migrated in place, keeping
// its rows, and takes health watches, policies and targets from then on.
TEST_F(StateDbTest, MigratesASchemaOneDatabase) {
  if (!HaveSqliteCli()) GTEST_SKIP() << kSqliteCli << " is not installed";
  {
    auto db = OpenOk();
    ASSERT_NE(db, nullptr);
    ASSERT_TRUE(db->CreateGroup("old", 1).ok());
  }
  ASSERT_TRUE(Cli(db_path_, {"drop table management; pragma user_version=1;"}));
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  auto groups = db->Groups();
  ASSERT_TRUE(groups.ok());
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].name, "old");
  ASSERT_TRUE(db->PutManagement({"policy", 2, "{\"conditions\":[\"xid\"]}", 5}).ok());
  ASSERT_TRUE(db->PutManagement({"policy", 2, "{\"conditions\":[\"dbe\"]}", 6}).ok());
  ASSERT_TRUE(db->PutManagement({"config", 0, "{\"power_limit_w\":500}", 7}).ok());
  auto rows = db->Management();
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 2u);  // a put replaces the row of its kind and group
  EXPECT_EQ((*rows)[0].spec, "{\"conditions\":[\"dbe\"]}");
  EXPECT_EQ((*rows)[1].kind, "config");
  EXPECT_TRUE(db->DeleteManagement("policy", 2).ok());
  EXPECT_EQ(db->DeleteManagement("policy", 2).error().code, ErrorCode::kNotFound);
  db.reset();
  std::string head = ReadBytes(db_path_).substr(0, 100);
  EXPECT_EQ(static_cast<unsigned char>(head[63]), static_cast<unsigned>(kSchemaVersion));
}

TEST_F(StateDbTest, RefusesAGpulseDatabaseWithTablesMissing) {
  if (!HaveSqliteCli()) GTEST_SKIP() << kSqliteCli << " is not installed";
  fs::create_directories(dir_);
  ASSERT_TRUE(Cli(db_path_, {"pragma application_id=" + std::to_string(kApplicationId) +
                             "; pragma user_version=1; create table meta(key, value);"}));
  const std::string before = ReadBytes(db_path_);
  std::string msg = OpenRefused();
  EXPECT_NE(msg.find("has no table \"counters\""), std::string::npos) << msg;
  ExpectUnchanged(db_path_, before);
}

TEST_F(StateDbTest, AdoptsAnEmptyFileAndAnEmptyDatabase) {
  fs::create_directories(dir_);
  WriteBytes(db_path_, "");
  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  EXPECT_TRUE(db->CreateGroup("g", 1).ok());
  db.reset();

  if (!HaveSqliteCli()) return;
  // An SQLite database with no tables and application_id 0, as a creation cut short leaves.
  fs::remove(db_path_);
  ASSERT_TRUE(Cli(db_path_, {"create table t(x); drop table t;"}));
  ASSERT_GT(fs::file_size(db_path_), 0u);
  db = OpenOk();
  ASSERT_NE(db, nullptr);
  auto g = db->CreateGroup("g", 1);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->id, 2);
}

TEST_F(StateDbTest, RefusesACorruptDatabaseAndLeavesIt) {
  {
    auto db = OpenOk();
    ASSERT_NE(db, nullptr);
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(db->CreateGroup("g" + std::to_string(i), i).ok());
    ASSERT_TRUE(db->SaveHistory({{"gpu:0", 150, std::string(20000, 'h')}}).ok());
  }
  std::string bytes = ReadBytes(db_path_);
  constexpr std::size_t kPage = 4096;
  ASSERT_GT(bytes.size(), 4 * kPage);
  // Garbage over every page after the first (the schema stays readable; the b-trees do not).
  std::uint32_t x = 12345;
  for (std::size_t i = kPage; i < bytes.size(); ++i) {
    x = x * 1103515245u + 12345u;
    bytes[i] = static_cast<char>(x >> 24);
  }
  WriteBytes(db_path_, bytes);
  std::string msg = OpenRefused();
  EXPECT_TRUE(msg.find("corrupt") != std::string::npos ||
              msg.find("not an SQLite database") != std::string::npos)
      << msg;
  EXPECT_NE(msg.find(db_path_), std::string::npos) << msg;
  ExpectUnchanged(db_path_, bytes);
}

// kill -9 right after a call returns: what the call reported done is in the database.
TEST_F(StateDbTest, ACommittedChangeSurvivesKillNine) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto db = StateDb::Open(dir_);
    if (!db.ok()) ::_exit(10);
    if (!(*db)->CreateGroup("survivor", 77).ok()) ::_exit(11);
    if (!(*db)->SetGroupEntities(2, {"gpu:0"}).ok()) ::_exit(12);
    ::raise(SIGKILL);
    ::_exit(13);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_GT(fs::file_size(db_path_ + "-wal"), 0u)
      << "the change was in the WAL, never checkpointed by a clean close";

  auto db = OpenOk();
  ASSERT_NE(db, nullptr);
  auto groups = db->Groups();
  ASSERT_TRUE(groups.ok()) << groups.error().message;
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].id, 2);
  EXPECT_EQ((*groups)[0].name, "survivor");
  EXPECT_EQ((*groups)[0].entities, std::vector<std::string>{"gpu:0"});
  auto next = db->CreateGroup("next", 1);
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(next->id, 3);
}

}  // namespace
}  // namespace gpulse::agent
