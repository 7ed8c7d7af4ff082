// Opening the agent's state database (state_db.h): the state directory and its lock, the checks
// that refuse a file, the pragmas, the schema and its numbered migrations.
//
// Open inspects an existing file through a read-only connection before it opens it read-write: a
// read-write connection rolls back a hot journal on its first read and checkpoints a WAL into the
// file when it closes, either of which would rewrite another program's file that we then refuse.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/state_db.h"
#include "agent/state_db_sql.h"

namespace gpulse::agent {
namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr char kSqliteMagic[16] = "SQLite format 3";  // 15 characters and the NUL: the header
constexpr const char* kTables[] = {"meta",    "counters", "groups", "group_entities",
                                   "watches", "jobs",     "history"};

// Version 1. `counters` holds the next id of each kind, so an id is never handed out twice even
// after its row is deleted (and after a reopen). Watches and jobs name group 0, which is never a
// row, so they carry no foreign key; DeleteGroup removes a group's watches itself.
constexpr const char* kSchemaSql = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE counters(name TEXT PRIMARY KEY, next_id INTEGER NOT NULL);
INSERT INTO counters(name, next_id) VALUES ('groups', 2), ('watches', 1);
CREATE TABLE groups(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  created_unix_ns INTEGER NOT NULL);
CREATE TABLE group_entities(
  group_id INTEGER NOT NULL REFERENCES groups(id) ON DELETE CASCADE,
  position INTEGER NOT NULL,
  entity TEXT NOT NULL,
  PRIMARY KEY(group_id, position));
CREATE TABLE watches(
  id INTEGER PRIMARY KEY,
  group_id INTEGER NOT NULL,
  field_ids TEXT NOT NULL,
  update_ms INTEGER NOT NULL,
  keep_age_s INTEGER NOT NULL,
  created_unix_ns INTEGER NOT NULL);
CREATE INDEX watches_by_group ON watches(group_id);
CREATE TABLE jobs(
  id TEXT PRIMARY KEY,
  group_id INTEGER NOT NULL,
  start_unix_ns INTEGER NOT NULL,
  stop_unix_ns INTEGER,
  stats_json TEXT NOT NULL DEFAULT '',
  notes TEXT NOT NULL DEFAULT '[]');
CREATE TABLE history(
  entity TEXT NOT NULL,
  field_id INTEGER NOT NULL,
  image BLOB NOT NULL,
  PRIMARY KEY(entity, field_id));
)sql";

// The numbered migrations: kMigrations[v] takes a database of schema v + 1 to v + 2. A fresh
// database gets kSchemaSql and then every migration, so both paths give the same schema.
constexpr const char* kMigrations[] = {
    // 1 -> 2: health watches, policies and configuration targets (issue 17).
    R"sql(
CREATE TABLE management(
  kind TEXT NOT NULL,
  group_id INTEGER NOT NULL,
  spec TEXT NOT NULL,
  updated_unix_ns INTEGER NOT NULL,
  PRIMARY KEY(kind, group_id));
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion - 1, "one migration per schema version");

std::string Hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
  return buf;
}

Error ErrnoError(int err, std::string message) {
  message += ": ";
  message += std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return {ErrorCode::kNotFound, std::move(message)};
    case EACCES:
    case EPERM:
    case EROFS:
      return {ErrorCode::kNoPermission, std::move(message)};
    default:
      return {ErrorCode::kIo, std::move(message)};
  }
}

// A one-row, one-column query of fixed SQL (a pragma).
Result<std::int64_t> QueryInt(sqlite3* db, const std::string& path, std::string_view sql) {
  Stmt s(db, path);
  if (auto st = s.Prepare(sql); !st) return st.error();
  auto row = s.Step();
  if (!row.ok()) return row.error();
  if (!*row) return Error{ErrorCode::kInternal, path + ": " + std::string(sql) + " gave no row"};
  return s.ColInt(0);
}

Result<std::string> QueryText(sqlite3* db, const std::string& path, std::string_view sql) {
  Stmt s(db, path);
  if (auto st = s.Prepare(sql); !st) return st.error();
  auto row = s.Step();
  if (!row.ok()) return row.error();
  if (!*row) return Error{ErrorCode::kInternal, path + ": " + std::string(sql) + " gave no row"};
  return s.ColText(0);
}

// ---- Opening ---------------------------------------------------------------------------------

// Makes a new entry in `dir` durable: without this a power cut can drop a just-created file (and
// every transaction committed into it) even though each commit was synced.
Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open directory " + dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) return ErrnoError(err, "cannot sync directory " + dir);
  return Status::Ok();
}

// mkdir -p with mode 0750 for each directory created (exactly, whatever the umask).
Status MakeDirs(const std::filesystem::path& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::Ok();
    return InvalidArgument("state directory " + dir.string() + ": not a directory");
  }
  if (errno != ENOENT) return ErrnoError(errno, "state directory " + dir.string());
  std::filesystem::path parent = dir.parent_path();
  if (!parent.empty() && parent != dir) {
    if (auto s = MakeDirs(parent); !s) return s;
  }
  if (::mkdir(dir.c_str(), 0750) != 0) {
    if (errno == EEXIST && ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return Status::Ok();  // made meanwhile by someone else
    }
    return ErrnoError(errno, "cannot create state directory " + dir.string());
  }
  if (::chmod(dir.c_str(), 0750) != 0) {
    return ErrnoError(errno, "cannot set the mode of state directory " + dir.string());
  }
  return SyncDir(parent.empty() ? "." : parent.string());
}

// Opens (creating, 0640) and locks agent.lock. The descriptor is close-on-exec so that a process
// the agent launches does not keep the directory locked after the agent is gone.
Result<int> LockStateDir(const std::string& dir, const std::string& lock_path) {
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
  bool created = fd >= 0;
  if (fd < 0 && errno == EEXIST) fd = ::open(lock_path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open lock file " + lock_path);
  if (created && ::fchmod(fd, 0640) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError(err, "cannot set the mode of lock file " + lock_path);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Unavailable("another gpulse agent holds " + dir + " (lock " + lock_path + ")");
    }
    return ErrnoError(err, "cannot lock " + lock_path);
  }
  return fd;
}

enum class FileState { kFresh, kExisting };

// Classifies the database file without changing it; creates it (empty, 0640) when missing, so
// that the mode is ours and not the umask's. Refuses a link, a non-regular file and a file that
// does not start with SQLite's header.
Result<FileState> ExamineFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0 && errno == ENOENT) {
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
    if (fd < 0) return ErrnoError(errno, "cannot create " + path);
    int rc = ::fchmod(fd, 0640);
    int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoError(err, "cannot set the mode of " + path);
    if (auto st = SyncDir(std::filesystem::path(path).parent_path().string()); !st) {
      return st.error();
    }
    return FileState::kFresh;
  }
  if (fd < 0 && errno == ELOOP) {
    return InvalidArgument(path + " is a symbolic link; refusing to follow it");
  }
  if (fd < 0) return ErrnoError(errno, "cannot open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return ErrnoError(err, "cannot stat " + path);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(path + " is not a regular file; refusing to use it");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return FileState::kFresh;
  }
  char head[sizeof kSqliteMagic] = {};
  ssize_t n;
  do {
    n = ::pread(fd, head, sizeof head, 0);
  } while (n < 0 && errno == EINTR);
  int err = errno;
  ::close(fd);
  if (n < 0) return ErrnoError(err, "cannot read " + path);
  if (n != static_cast<ssize_t>(sizeof head) || std::memcmp(head, kSqliteMagic, sizeof head) != 0) {
    return InvalidArgument(path +
                           " is not an SQLite database; refusing to overwrite it (move it away "
                           "to start afresh)");
  }
  return FileState::kExisting;
}

Result<bool> HasAnyTable(sqlite3* db, const std::string& path) {
  auto n = QueryInt(db, path, "SELECT count(*) FROM sqlite_master");
  if (!n.ok()) return n.error();
  return *n > 0;
}

// An error while inspecting: damage reads as "corrupt", whatever step met it.
Error InspectError(const std::string& path, const Error& e, sqlite3* db) {
  int rc = sqlite3_errcode(db) & 0xff;
  if (rc == SQLITE_CORRUPT) {
    return InvalidArgument(path + " is corrupt: " + sqlite3_errmsg(db) +
                           " (move it away to start afresh)");
  }
  if (rc == SQLITE_NOTADB) {
    return InvalidArgument(path +
                           " is not an SQLite database; refusing to overwrite it (move it away "
                           "to start afresh)");
  }
  return e;
}

// What Open needs to know about an existing file: whether it still needs the schema (a database
// with application_id 0 and no tables, such as one whose creation was interrupted).
Result<bool> InspectChecks(sqlite3* db, const std::string& path) {
  auto app = QueryInt(db, path, "PRAGMA application_id");
  if (!app.ok()) return app.error();
  auto any = HasAnyTable(db, path);
  if (!any.ok()) return any.error();
  const auto app_id = static_cast<std::uint32_t>(*app);
  if (app_id == 0 && !*any) return true;
  if (app_id != kApplicationId) {
    return InvalidArgument(path + " belongs to another program (application_id " + Hex32(app_id) +
                           "); refusing to use it");
  }
  auto version = QueryInt(db, path, "PRAGMA user_version");
  if (!version.ok()) return version.error();
  if (*version > kSchemaVersion) {
    return InvalidArgument(path + " was written by a newer gpulse (schema " +
                           std::to_string(*version) + ", this one reads up to " +
                           std::to_string(kSchemaVersion) + ")");
  }
  if (*version < 1) {
    return InvalidArgument(path + " has gpulse's tables but no schema version (user_version " +
                           std::to_string(*version) + "); refusing to use it");
  }
  auto check = QueryText(db, path, "PRAGMA quick_check(1)");
  if (!check.ok()) return check.error();
  if (*check != "ok") {
    std::string first = *check;
    constexpr std::string_view kPrefix = "*** in database main ***\n";
    if (first.rfind(kPrefix, 0) == 0) first.erase(0, kPrefix.size());
    return InvalidArgument(path + " is corrupt: " + first + " (move it away to start afresh)");
  }
  std::vector<const char*> tables(std::begin(kTables), std::end(kTables));
  if (*version >= 2) tables.push_back("management");
  for (const char* table : tables) {
    Stmt s(db, path);
    if (auto st = s.Prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1"); !st)
      return st.error();
    s.Text(1, table);
    auto row = s.Step();
    if (!row.ok()) return row.error();
    if (!*row) {
      return InvalidArgument(path + " has no table \"" + table + "\" (schema " +
                             std::to_string(*version) + "); refusing to use it");
    }
  }
  return false;
}

// Inspects an existing database through a read-only connection that never checkpoints, so a
// refused file is left exactly as it was. True when the schema is still to be created.
Result<bool> Inspect(const std::string& path) {
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, nullptr);
  Result<bool> out = false;
  if (rc != SQLITE_OK) {
    out = SqlError(db, rc, path, "cannot open");
  } else {
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    out = InspectChecks(db, path);
    if (!out.ok()) out = InspectError(path, out.error(), db);
  }
  sqlite3_close(db);
  return out;
}

Status SetPragmas(sqlite3* db, const std::string& path) {
  auto mode = QueryText(db, path, "PRAGMA journal_mode=WAL");
  if (!mode.ok()) return mode.error();
  if (*mode != "wal") {
    return Error{ErrorCode::kUnavailable,
                 path + ": cannot switch to WAL mode (journal_mode stays " + *mode +
                     "); is the file on a filesystem without shared memory?"};
  }
  if (auto st = Exec(db, path, "PRAGMA synchronous=FULL"); !st) return st;
  if (auto st = Exec(db, path, "PRAGMA foreign_keys=ON"); !st) return st;
  // A pragma inside a transaction is silently ignored; check the ones correctness rests on.
  auto sync = QueryInt(db, path, "PRAGMA synchronous");
  if (!sync.ok()) return sync.error();
  auto fk = QueryInt(db, path, "PRAGMA foreign_keys");
  if (!fk.ok()) return fk.error();
  if (*sync != 2 || *fk != 1) {
    return Error{ErrorCode::kInternal, path + ": synchronous=FULL or foreign_keys=ON did not take"};
  }
  return Status::Ok();
}

Status CreateSchema(sqlite3* db, const std::string& path) {
  Txn txn(db, path);
  if (auto st = txn.Begin(); !st) return st;
  // Checked again under the write lock: the read-only look came before this connection.
  auto app = QueryInt(db, path, "PRAGMA application_id");
  if (!app.ok()) return app.error();
  auto any = HasAnyTable(db, path);
  if (!any.ok()) return any.error();
  if (*app != 0 || *any) {
    return InvalidArgument(path + " changed while gpulse opened it; refusing to use it");
  }
  if (auto st = Exec(db, path, kSchemaSql, "cannot create the schema"); !st) return st;
  for (const char* migration : kMigrations) {
    if (auto st = Exec(db, path, migration, "cannot create the schema"); !st) return st;
  }
  const std::string set_app = "PRAGMA application_id=" + std::to_string(kApplicationId);
  if (auto st = Exec(db, path, set_app.c_str()); !st) return st;
  const std::string set_version = "PRAGMA user_version=" + std::to_string(kSchemaVersion);
  if (auto st = Exec(db, path, set_version.c_str()); !st) return st;
  return txn.Commit();
}

// Brings an older gpulse's database to kSchemaVersion, one numbered migration at a time, each in
// its own transaction with the version it reaches.
Status Migrate(sqlite3* db, const std::string& path) {
  auto version = QueryInt(db, path, "PRAGMA user_version");
  if (!version.ok()) return version.error();
  for (auto v = *version; v < kSchemaVersion; ++v) {
    Txn txn(db, path);
    if (auto st = txn.Begin(); !st) return st;
    if (auto st = Exec(db, path, kMigrations[v - 1], "cannot migrate the schema"); !st) return st;
    const std::string set_version = "PRAGMA user_version=" + std::to_string(v + 1);
    if (auto st = Exec(db, path, set_version.c_str()); !st) return st;
    if (auto st = txn.Commit(); !st) return st;
  }
  return Status::Ok();
}

}  // namespace

StateDb::StateDb(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StateDb::~StateDb() = default;

std::string StateDb::path() const { return impl_->path; }

Result<std::unique_ptr<StateDb>> StateDb::Open(const std::string& state_dir) {
  if (state_dir.empty()) return InvalidArgument("the state directory is empty");
  if (auto st = MakeDirs(state_dir); !st) return st.error();
  // A state directory reached through a symbolic link (/var/lib/gpulse -> /data/gpulse) is resolved
  // once, here: SQLite opens with NOFOLLOW, which refuses a link anywhere in the database's path.
  std::error_code resolve_error;
  std::filesystem::path dir = std::filesystem::canonical(state_dir, resolve_error);
  if (resolve_error) {
    return ErrnoError(resolve_error.value(), "state directory " + state_dir + ": cannot resolve");
  }
  auto impl = std::make_unique<Impl>();
  impl->dir = dir.string();
  impl->path = (dir / kDatabaseFile).string();
  auto lock = LockStateDir(impl->dir, (dir / kLockFile).string());
  if (!lock.ok()) return lock.error();
  impl->lock_fd = *lock;

  auto state = ExamineFile(impl->path);
  if (!state.ok()) return state.error();
  bool needs_schema = true;
  if (*state == FileState::kExisting) {
    auto inspected = Inspect(impl->path);
    if (!inspected.ok()) return inspected.error();
    needs_schema = *inspected;
  }

  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW;
  if (*state == FileState::kFresh) flags |= SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(impl->path.c_str(), &impl->db, flags, nullptr);
  if (rc != SQLITE_OK) return SqlError(impl->db, rc, impl->path, "cannot open");
  sqlite3_extended_result_codes(impl->db, 1);
  if (sqlite3_busy_timeout(impl->db, kBusyTimeoutMs) != SQLITE_OK) {
    return SqlError(impl->db, sqlite3_errcode(impl->db), impl->path, "cannot set busy_timeout");
  }
  if (auto st = SetPragmas(impl->db, impl->path); !st) return st.error();
  if (needs_schema) {
    if (auto st = CreateSchema(impl->db, impl->path); !st) return st.error();
  } else if (auto st = Migrate(impl->db, impl->path); !st) {
    return st.error();
  }
  return std::unique_ptr<StateDb>(new StateDb(std::move(impl)));
}

}  // namespace gpulse::agent
