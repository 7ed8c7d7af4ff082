// The agent's state database: SQLite through its C API, one connection, errors as values.
//
// Open inspects an existing file through a read-only connection before it opens it read-write: a
// read-write connection rolls back a hot journal on its first read and checkpoints a WAL into the
// file when it closes, either of which would rewrite another program's file that we then refuse.
#include "agent/state_db.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>
#include <vector>

#include "core/json_limits.h"

namespace gpulse::agent {
namespace {

// Bounds that keep a confused caller from filling the disk through one call; the agent validates
// names and ids more strictly itself.
constexpr std::size_t kMaxNameBytes = 4096;  // group names, job ids, entity keys, meta keys, notes
constexpr std::size_t kMaxTextBytes = 16u << 20;  // stats_json, meta values, a job's notes as JSON
constexpr std::size_t kMaxImageBytes = 256u << 20;  // one history series image
constexpr std::size_t kMaxItems = 65536;  // entities of a group, fields of a watch, notes of a job

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

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

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

ErrorCode CodeOfSqlite(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return ErrorCode::kUnavailable;
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      return ErrorCode::kNoPermission;
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return ErrorCode::kIo;
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return ErrorCode::kInvalidArgument;
    default:
      return ErrorCode::kInternal;
  }
}

// "<path>: <what>: <sqlite's message>".
Error SqlError(sqlite3* db, int rc, const std::string& path, std::string_view what) {
  const char* msg = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return {CodeOfSqlite(rc), path + ": " + std::string(what) + ": " + msg};
}

Status CheckSize(std::string_view what, std::size_t size, std::size_t limit) {
  if (size <= limit) return Status::Ok();
  return InvalidArgument(std::string(what) + " is " + std::to_string(size) +
                         " bytes; the state database takes at most " + std::to_string(limit));
}

Status CheckCount(std::string_view what, std::size_t n) {
  if (n <= kMaxItems) return Status::Ok();
  return InvalidArgument(std::to_string(n) + " " + std::string(what) +
                         "; the state database takes at most " + std::to_string(kMaxItems));
}

// One prepared statement. Bind errors are kept and reported by the next Step, so call sites bind
// without checking each call.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path) : db_(db), path_(path) {}
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(stmt_); }

  Status Prepare(std::string_view sql) {
    int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
    if (rc != SQLITE_OK) return SqlError(db_, rc, path_, "cannot prepare a statement");
    return Status::Ok();
  }

  Stmt& Int(int i, std::int64_t v) { return Note(sqlite3_bind_int64(stmt_, i, v)); }
  Stmt& Null(int i) { return Note(sqlite3_bind_null(stmt_, i)); }
  Stmt& Text(int i, std::string_view v) {
    // Never a null pointer: SQLite binds that as NULL, not as the empty string.
    return Note(sqlite3_bind_text64(stmt_, i, v.empty() ? "" : v.data(), v.size(), SQLITE_TRANSIENT,
                                    SQLITE_UTF8));
  }
  Stmt& Blob(int i, std::string_view v) {
    return Note(v.empty() ? sqlite3_bind_zeroblob(stmt_, i, 0)
                          : sqlite3_bind_blob64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT));
  }

  // True with a row to read, false when done.
  Result<bool> Step() {
    if (bind_rc_ != SQLITE_OK) return SqlError(db_, bind_rc_, path_, "cannot bind a value");
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqlError(db_, rc, path_, "statement failed");
  }
  // Runs a statement that returns no rows.
  Status Run() {
    auto r = Step();
    if (!r.ok()) return r.error();
    return Status::Ok();
  }
  // Makes the statement ready to run again with new bindings.
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::int64_t ColInt(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string ColText(int col) const { return Bytes(sqlite3_column_text(stmt_, col), col); }
  std::string ColBlob(int col) const { return Bytes(sqlite3_column_blob(stmt_, col), col); }

 private:
  Stmt& Note(int rc) {
    if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
    return *this;
  }
  // Column bytes as written, NULs included (the text and blob accessors must precede bytes()).
  std::string Bytes(const void* p, int col) const {
    int n = sqlite3_column_bytes(stmt_, col);
    return p == nullptr ? std::string() : std::string(static_cast<const char*>(p), n);
  }

  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
  int bind_rc_ = SQLITE_OK;
};

// Runs fixed SQL; `what` names it in an error (the SQL itself, unless told otherwise).
Status Exec(sqlite3* db, const std::string& path, const char* sql, const char* what = nullptr) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return Error{CodeOfSqlite(rc), path + ": " + (what != nullptr ? what : sql) + ": " + msg};
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

// BEGIN IMMEDIATE ... COMMIT, rolled back unless committed: every mutating call is one of these,
// so a failure part-way leaves the database as it was.
class Txn {
 public:
  Txn(sqlite3* db, const std::string& path) : db_(db), path_(path) {}
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  ~Txn() {
    // SQLite may have rolled back already (SQLITE_FULL, SQLITE_IOERR); then autocommit is on.
    if (open_ && sqlite3_get_autocommit(db_) == 0)
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Status Begin() {
    if (auto st = Exec(db_, path_, "BEGIN IMMEDIATE"); !st) return st;
    open_ = true;
    return Status::Ok();
  }
  Status Commit() {
    if (auto st = Exec(db_, path_, "COMMIT"); !st) return st;
    open_ = false;
    return Status::Ok();
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool open_ = false;
};

// Runs `body` (returning Status or Result<T>) inside a transaction, committing on success.
template <typename Body>
auto InTxn(sqlite3* db, const std::string& path, Body body) -> decltype(body()) {
  Txn txn(db, path);
  if (auto st = txn.Begin(); !st) return st.error();
  auto out = body();
  if (!out.ok()) return out;
  if (auto st = txn.Commit(); !st) return st.error();
  return out;
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

// ---- Row helpers -----------------------------------------------------------------------------

std::string JoinIds(const std::vector<int>& ids) {
  std::string out;
  for (int id : ids) {
    if (!out.empty()) out += ',';
    out += std::to_string(id);
  }
  return out;
}

std::optional<std::vector<int>> SplitIds(std::string_view text) {
  std::vector<int> ids;
  if (text.empty()) return ids;
  while (true) {
    std::size_t comma = text.find(',');
    std::string_view part = text.substr(0, comma);
    int v = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (ec != std::errc() || end != part.data() + part.size() || part.empty()) return std::nullopt;
    ids.push_back(v);
    if (comma == std::string_view::npos) return ids;
    text.remove_prefix(comma + 1);
  }
}

Result<std::string> NotesToJson(const std::vector<std::string>& notes) {
  if (auto st = CheckCount("job notes", notes.size()); !st) return st.error();
  nlohmann::json arr = nlohmann::json::array();
  for (const std::string& n : notes) {
    if (auto st = CheckSize("a job note", n.size(), kMaxNameBytes); !st) return st.error();
    arr.push_back(n);
  }
  std::string text;
  try {
    text = arr.dump();
  } catch (const nlohmann::json::exception&) {  // dump throws on invalid UTF-8
    return InvalidArgument("a job note is not valid UTF-8");
  }
  if (auto st = CheckSize("a job's notes as JSON", text.size(), kMaxTextBytes); !st) {
    return st.error();
  }
  return text;
}

// The stored notes back as strings; nullopt when they are not a JSON array of strings (or pass
// the bounds they were written under: the file may have been edited by hand).
std::optional<std::vector<std::string>> NotesFromJson(const std::string& text) {
  JsonLimits limits;
  limits.max_bytes = kMaxTextBytes;
  limits.max_depth = 2;
  limits.max_values = kMaxItems + 1;
  if (CheckJsonShape(text, limits)) return std::nullopt;
  nlohmann::json arr = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!arr.is_array()) return std::nullopt;
  std::vector<std::string> notes;
  for (const auto& n : arr) {
    if (!n.is_string()) return std::nullopt;
    notes.push_back(n.get<std::string>());
  }
  return notes;
}

Status CheckJob(const JobRow& job) {
  if (auto st = CheckSize("job id", job.id.size(), kMaxNameBytes); !st) return st;
  return CheckSize("job statistics", job.stats_json.size(), kMaxTextBytes);
}

// Takes the next id of `kind` from `counters` and advances it (inside the caller's transaction).
Result<int> NextId(sqlite3* db, const std::string& path, const char* kind) {
  Stmt get(db, path);
  if (auto st = get.Prepare("SELECT next_id FROM counters WHERE name = ?1"); !st) return st.error();
  get.Text(1, kind);
  auto row = get.Step();
  if (!row.ok()) return row.error();
  if (!*row) return Error{ErrorCode::kInternal, path + ": no id counter for " + kind};
  const std::int64_t id = get.ColInt(0);
  if (id < 1 || id >= INT_MAX) {
    return Error{ErrorCode::kUnavailable, path + ": " + kind + " ids are used up"};
  }
  Stmt bump(db, path);
  if (auto st = bump.Prepare("UPDATE counters SET next_id = ?2 WHERE name = ?1"); !st)
    return st.error();
  bump.Text(1, kind).Int(2, id + 1);
  if (auto st = bump.Run(); !st) return st.error();
  return static_cast<int>(id);
}

}  // namespace

struct StateDb::Impl {
  std::string dir;
  std::string path;
  int lock_fd = -1;
  sqlite3* db = nullptr;

  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    // The connection first: its close checkpoints the WAL while we still hold the directory.
    if (db != nullptr) sqlite3_close(db);
    if (lock_fd >= 0) ::close(lock_fd);
  }

  Result<bool> GroupExists(int id) {
    Stmt s(db, path);
    if (auto st = s.Prepare("SELECT 1 FROM groups WHERE id = ?1"); !st) return st.error();
    s.Int(1, id);
    return s.Step();
  }

  Status InsertEntities(int group_id, const std::vector<std::string>& entities) {
    Stmt s(db, path);
    if (auto st = s.Prepare("INSERT INTO group_entities(group_id, position, entity) "
                            "VALUES (?1, ?2, ?3)");
        !st)
      return st;
    for (std::size_t i = 0; i < entities.size(); ++i) {
      s.Int(1, group_id).Int(2, static_cast<std::int64_t>(i)).Text(3, entities[i]);
      if (auto st = s.Run(); !st) return st;
      s.Reset();
    }
    return Status::Ok();
  }

  Result<std::vector<std::string>> EntitiesOf(int group_id) {
    Stmt s(db, path);
    if (auto st = s.Prepare("SELECT entity FROM group_entities WHERE group_id = ?1 "
                            "ORDER BY position");
        !st)
      return st.error();
    s.Int(1, group_id);
    std::vector<std::string> out;
    while (true) {
      auto row = s.Step();
      if (!row.ok()) return row.error();
      if (!*row) return out;
      out.push_back(s.ColText(0));
    }
  }

  Result<JobRow> ReadJob(const Stmt& s) {
    JobRow job;
    job.id = s.ColText(0);
    job.group_id = static_cast<int>(s.ColInt(1));
    job.start_unix_ns = s.ColInt(2);
    if (!s.IsNull(3)) job.stop_unix_ns = s.ColInt(3);
    job.stats_json = s.ColText(4);
    auto notes = NotesFromJson(s.ColText(5));
    if (!notes) {
      return Error{ErrorCode::kInternal, path + ": job " + Quoted(job.id) +
                                             " has notes that are not a JSON array of strings"};
    }
    job.notes = std::move(*notes);
    return job;
  }
};

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

// ---- Groups ----------------------------------------------------------------------------------

Result<GroupRow> StateDb::CreateGroup(const std::string& name, std::int64_t now_unix_ns) {
  if (auto st = CheckSize("group name", name.size(), kMaxNameBytes); !st) return st.error();
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Result<GroupRow> {
    Stmt find(m.db, m.path);
    if (auto st = find.Prepare("SELECT id FROM groups WHERE name = ?1"); !st) return st.error();
    find.Text(1, name);
    auto row = find.Step();
    if (!row.ok()) return row.error();
    if (*row) {
      return InvalidArgument("a group named " + Quoted(name) + " exists (id " +
                             std::to_string(find.ColInt(0)) + ")");
    }
    auto id = NextId(m.db, m.path, "groups");
    if (!id.ok()) return id.error();
    Stmt ins(m.db, m.path);
    if (auto st = ins.Prepare("INSERT INTO groups(id, name, created_unix_ns) VALUES (?1, ?2, ?3)");
        !st)
      return st.error();
    ins.Int(1, *id).Text(2, name).Int(3, now_unix_ns);
    if (auto st = ins.Run(); !st) return st.error();
    GroupRow g;
    g.id = *id;
    g.name = name;
    g.created_unix_ns = now_unix_ns;
    return g;
  });
}

Result<std::vector<GroupRow>> StateDb::Groups() {
  Impl& m = *impl_;
  Stmt s(m.db, m.path);
  if (auto st = s.Prepare("SELECT id, name, created_unix_ns FROM groups ORDER BY id"); !st)
    return st.error();
  std::vector<GroupRow> out;
  while (true) {
    auto row = s.Step();
    if (!row.ok()) return row.error();
    if (!*row) break;
    GroupRow g;
    g.id = static_cast<int>(s.ColInt(0));
    g.name = s.ColText(1);
    g.created_unix_ns = s.ColInt(2);
    out.push_back(std::move(g));
  }
  for (GroupRow& g : out) {
    auto entities = m.EntitiesOf(g.id);
    if (!entities.ok()) return entities.error();
    g.entities = std::move(*entities);
  }
  return out;
}

Status StateDb::SetGroupEntities(int group_id, const std::vector<std::string>& entities) {
  if (auto st = CheckCount("entities", entities.size()); !st) return st;
  for (const std::string& e : entities) {
    if (auto st = CheckSize("entity key", e.size(), kMaxNameBytes); !st) return st;
  }
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    auto exists = m.GroupExists(group_id);
    if (!exists.ok()) return exists.error();
    if (!*exists) return NotFound("no group " + std::to_string(group_id));
    Stmt del(m.db, m.path);
    if (auto st = del.Prepare("DELETE FROM group_entities WHERE group_id = ?1"); !st) return st;
    del.Int(1, group_id);
    if (auto st = del.Run(); !st) return st;
    return m.InsertEntities(group_id, entities);
  });
}

Status StateDb::DeleteGroup(int group_id) {
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    Stmt del(m.db, m.path);
    if (auto st = del.Prepare("DELETE FROM groups WHERE id = ?1"); !st) return st;
    del.Int(1, group_id);
    if (auto st = del.Run(); !st) return st;
    if (sqlite3_changes(m.db) == 0) return NotFound("no group " + std::to_string(group_id));
    // Entities go by ON DELETE CASCADE; watches carry no foreign key (group 0), so go here.
    Stmt watches(m.db, m.path);
    if (auto st = watches.Prepare("DELETE FROM watches WHERE group_id = ?1"); !st) return st;
    watches.Int(1, group_id);
    return watches.Run();
  });
}

// ---- Watches ---------------------------------------------------------------------------------

Result<WatchRow> StateDb::AddWatch(const WatchRow& watch) {
  if (auto st = CheckCount("field ids", watch.field_ids.size()); !st) return st.error();
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Result<WatchRow> {
    // Group 0 is never a row; any other group must exist, or DeleteGroup could never remove the
    // watch and it would outlive its group.
    if (watch.group_id != 0) {
      auto exists = m.GroupExists(watch.group_id);
      if (!exists.ok()) return exists.error();
      if (!*exists) return NotFound("no group " + std::to_string(watch.group_id));
    }
    auto id = NextId(m.db, m.path, "watches");
    if (!id.ok()) return id.error();
    Stmt ins(m.db, m.path);
    if (auto st = ins.Prepare("INSERT INTO watches(id, group_id, field_ids, update_ms, "
                              "keep_age_s, created_unix_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
        !st)
      return st.error();
    ins.Int(1, *id)
        .Int(2, watch.group_id)
        .Text(3, JoinIds(watch.field_ids))
        .Int(4, watch.update_ms)
        .Int(5, watch.keep_age_s)
        .Int(6, watch.created_unix_ns);
    if (auto st = ins.Run(); !st) return st.error();
    WatchRow out = watch;
    out.id = *id;
    return out;
  });
}

Result<std::vector<WatchRow>> StateDb::Watches() {
  Impl& m = *impl_;
  Stmt s(m.db, m.path);
  if (auto st = s.Prepare("SELECT id, group_id, field_ids, update_ms, keep_age_s, created_unix_ns "
                          "FROM watches ORDER BY id");
      !st)
    return st.error();
  std::vector<WatchRow> out;
  while (true) {
    auto row = s.Step();
    if (!row.ok()) return row.error();
    if (!*row) return out;
    WatchRow w;
    w.id = static_cast<int>(s.ColInt(0));
    w.group_id = static_cast<int>(s.ColInt(1));
    auto ids = SplitIds(s.ColText(2));
    if (!ids) {
      return Error{ErrorCode::kInternal,
                   m.path + ": watch " + std::to_string(w.id) + " has a malformed field list"};
    }
    w.field_ids = std::move(*ids);
    w.update_ms = s.ColInt(3);
    w.keep_age_s = s.ColInt(4);
    w.created_unix_ns = s.ColInt(5);
    out.push_back(std::move(w));
  }
}

Status StateDb::DeleteWatch(int watch_id) {
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    Stmt del(m.db, m.path);
    if (auto st = del.Prepare("DELETE FROM watches WHERE id = ?1"); !st) return st;
    del.Int(1, watch_id);
    if (auto st = del.Run(); !st) return st;
    if (sqlite3_changes(m.db) == 0) return NotFound("no watch " + std::to_string(watch_id));
    return Status::Ok();
  });
}

// ---- Jobs ------------------------------------------------------------------------------------

Status StateDb::StartJob(const JobRow& job) {
  if (auto st = CheckJob(job); !st) return st;
  auto notes = NotesToJson(job.notes);
  if (!notes.ok()) return notes.error();
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    Stmt find(m.db, m.path);
    if (auto st = find.Prepare("SELECT 1 FROM jobs WHERE id = ?1"); !st) return st;
    find.Text(1, job.id);
    auto row = find.Step();
    if (!row.ok()) return row.error();
    if (*row) return InvalidArgument("job " + Quoted(job.id) + " exists");
    Stmt ins(m.db, m.path);
    if (auto st = ins.Prepare("INSERT INTO jobs(id, group_id, start_unix_ns, stop_unix_ns, "
                              "stats_json, notes) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
        !st)
      return st;
    ins.Text(1, job.id).Int(2, job.group_id).Int(3, job.start_unix_ns);
    if (job.stop_unix_ns) {
      ins.Int(4, *job.stop_unix_ns);
    } else {
      ins.Null(4);
    }
    ins.Text(5, job.stats_json).Text(6, *notes);
    return ins.Run();
  });
}

Status StateDb::PutJob(const JobRow& job) {
  if (auto st = CheckJob(job); !st) return st;
  auto notes = NotesToJson(job.notes);
  if (!notes.ok()) return notes.error();
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    Stmt up(m.db, m.path);
    if (auto st = up.Prepare("UPDATE jobs SET group_id = ?2, start_unix_ns = ?3, "
                             "stop_unix_ns = ?4, stats_json = ?5, notes = ?6 WHERE id = ?1");
        !st)
      return st;
    up.Text(1, job.id).Int(2, job.group_id).Int(3, job.start_unix_ns);
    if (job.stop_unix_ns) {
      up.Int(4, *job.stop_unix_ns);
    } else {
      up.Null(4);
    }
    up.Text(5, job.stats_json).Text(6, *notes);
    if (auto st = up.Run(); !st) return st;
    if (sqlite3_changes(m.db) == 0) return NotFound("no job " + Quoted(job.id));
    return Status::Ok();
  });
}

Result<std::optional<JobRow>> StateDb::Job(const std::string& id) {
  Impl& m = *impl_;
  Stmt s(m.db, m.path);
  if (auto st = s.Prepare("SELECT id, group_id, start_unix_ns, stop_unix_ns, stats_json, notes "
                          "FROM jobs WHERE id = ?1");
      !st)
    return st.error();
  s.Text(1, id);
  auto row = s.Step();
  if (!row.ok()) return row.error();
  if (!*row) return std::optional<JobRow>();
  auto job = m.ReadJob(s);
  if (!job.ok()) return job.error();
  return std::optional<JobRow>(std::move(*job));
}

Result<std::vector<JobRow>> StateDb::Jobs() {
  Impl& m = *impl_;
  Stmt s(m.db, m.path);
  if (auto st = s.Prepare("SELECT id, group_id, start_unix_ns, stop_unix_ns, stats_json, notes "
                          "FROM jobs ORDER BY start_unix_ns, id");
      !st)
    return st.error();
  std::vector<JobRow> out;
  while (true) {
    auto row = s.Step();
    if (!row.ok()) return row.error();
    if (!*row) return out;
    auto job = m.ReadJob(s);
    if (!job.ok()) return job.error();
    out.push_back(std::move(*job));
  }
}

Status StateDb::DeleteJob(const std::string& id) {
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    Stmt del(m.db, m.path);
    if (auto st = del.Prepare("DELETE FROM jobs WHERE id = ?1"); !st) return st;
    del.Text(1, id);
    if (auto st = del.Run(); !st) return st;
    if (sqlite3_changes(m.db) == 0) return NotFound("no job " + Quoted(id));
    return Status::Ok();
  });
}

// ---- History ---------------------------------------------------------------------------------

Status StateDb::SaveHistory(const std::vector<HistoryBlob>& blobs) {
  std::size_t i = 0;
  return SaveHistory([&]() -> std::optional<HistoryBlob> {
    if (i == blobs.size()) return std::nullopt;
    return blobs[i++];
  });
}

Status StateDb::SaveHistory(const std::function<std::optional<HistoryBlob>()>& next) {
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    if (auto st = Exec(m.db, m.path, "DELETE FROM history"); !st) return st;
    Stmt ins(m.db, m.path);
    if (auto st = ins.Prepare("INSERT INTO history(entity, field_id, image) VALUES (?1, ?2, ?3)");
        !st)
      return st;
    for (std::optional<HistoryBlob> blob = next(); blob; blob = next()) {
      const HistoryBlob& b = *blob;
      if (auto st = CheckSize("entity key", b.entity.size(), kMaxNameBytes); !st) return st;
      if (auto st = CheckSize("a history image", b.image.size(), kMaxImageBytes); !st) return st;
      ins.Text(1, b.entity).Int(2, b.field_id).Blob(3, b.image);
      if (auto st = ins.Run(); !st) {
        if (st.error().code != ErrorCode::kInvalidArgument) return st;
        return InvalidArgument("two history series for entity " + Quoted(b.entity) + " field " +
                               std::to_string(b.field_id));
      }
      ins.Reset();
    }
    return Status::Ok();
  });
}

Result<std::vector<HistoryBlob>> StateDb::LoadHistory() {
  Impl& m = *impl_;
  Stmt s(m.db, m.path);
  if (auto st = s.Prepare("SELECT entity, field_id, image FROM history ORDER BY entity, field_id");
      !st)
    return st.error();
  std::vector<HistoryBlob> out;
  while (true) {
    auto row = s.Step();
    if (!row.ok()) return row.error();
    if (!*row) return out;
    HistoryBlob b;
    b.entity = s.ColText(0);
    b.field_id = static_cast<int>(s.ColInt(1));
    b.image = s.ColBlob(2);
    out.push_back(std::move(b));
  }
}

// ---- Meta ------------------------------------------------------------------------------------

Status StateDb::PutMeta(const std::string& key, const std::string& value) {
  if (auto st = CheckSize("meta key", key.size(), kMaxNameBytes); !st) return st;
  if (auto st = CheckSize("meta value", value.size(), kMaxTextBytes); !st) return st;
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    Stmt up(m.db, m.path);
    if (auto st = up.Prepare("INSERT INTO meta(key, value) VALUES (?1, ?2) "
                             "ON CONFLICT(key) DO UPDATE SET value = excluded.value");
        !st)
      return st;
    up.Text(1, key).Text(2, value);
    return up.Run();
  });
}

Result<std::optional<std::string>> StateDb::Meta(const std::string& key) {
  Impl& m = *impl_;
  Stmt s(m.db, m.path);
  if (auto st = s.Prepare("SELECT value FROM meta WHERE key = ?1"); !st) return st.error();
  s.Text(1, key);
  auto row = s.Step();
  if (!row.ok()) return row.error();
  if (!*row) return std::optional<std::string>();
  return std::optional<std::string>(s.ColText(0));
}

// ---- Management (health, policy, config) -----------------------------------------------------

Status StateDb::PutManagement(const ManagementRow& row) {
  if (auto st = CheckSize("management spec", row.spec.size(), kMaxTextBytes); !st) return st;
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    Stmt up(m.db, m.path);
    if (auto st = up.Prepare(
            "INSERT INTO management(kind, group_id, spec, updated_unix_ns) VALUES (?1, ?2, ?3, ?4) "
            "ON CONFLICT(kind, group_id) DO UPDATE SET spec = excluded.spec, "
            "updated_unix_ns = excluded.updated_unix_ns");
        !st)
      return st;
    up.Text(1, row.kind).Int(2, row.group_id).Text(3, row.spec).Int(4, row.updated_unix_ns);
    return up.Run();
  });
}

Status StateDb::DeleteManagement(const std::string& kind, int group_id) {
  Impl& m = *impl_;
  return InTxn(m.db, m.path, [&]() -> Status {
    Stmt del(m.db, m.path);
    if (auto st = del.Prepare("DELETE FROM management WHERE kind = ?1 AND group_id = ?2"); !st)
      return st;
    del.Text(1, kind).Int(2, group_id);
    if (auto st = del.Run(); !st) return st;
    if (sqlite3_changes(m.db) == 0) {
      return NotFound("group " + std::to_string(group_id) + " has no " + kind);
    }
    return Status::Ok();
  });
}

Result<std::vector<ManagementRow>> StateDb::Management() {
  Impl& m = *impl_;
  Stmt s(m.db, m.path);
  if (auto st = s.Prepare("SELECT kind, group_id, spec, updated_unix_ns FROM management "
                          "ORDER BY updated_unix_ns, kind, group_id");
      !st)
    return st.error();
  std::vector<ManagementRow> out;
  for (;;) {
    auto row = s.Step();
    if (!row.ok()) return row.error();
    if (!*row) break;
    out.push_back({s.ColText(0), static_cast<int>(s.ColInt(1)), s.ColText(2), s.ColInt(3)});
  }
  return out;
}

}  // namespace gpulse::agent
