// The state database's SQLite plumbing, shared by the files of StateDb (state_db.h is its face):
// state_db_sql.cc (errors and bounds as values, fixed SQL), state_db_open.cc (opening, the schema,
// migrations), state_db.cc (groups, watches, history, management rows, meta values) and
// state_db_jobs.cc (jobs). One connection through SQLite's C API. Internal to src/agent.
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agent/state_db.h"
#include "core/result.h"

namespace gpulse::agent {

// Bounds that keep a confused caller from filling the disk through one call; the agent validates
// names and ids more strictly itself.
constexpr std::size_t kMaxNameBytes = 4096;  // group names, job ids, entity keys, meta keys, notes
constexpr std::size_t kMaxTextBytes = 16u << 20;  // stats_json, meta values, a job's notes as JSON
constexpr std::size_t kMaxImageBytes = 256u << 20;  // one history series image
constexpr std::size_t kMaxItems = 65536;  // entities of a group, fields of a watch, notes of a job

std::string Quoted(std::string_view s);

// "<path>: <what>: <sqlite's message>".
Error SqlError(sqlite3* db, int rc, const std::string& path, std::string_view what);

Status CheckSize(std::string_view what, std::size_t size, std::size_t limit);
Status CheckCount(std::string_view what, std::size_t n);

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
Status Exec(sqlite3* db, const std::string& path, const char* sql, const char* what = nullptr);

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

  Result<bool> GroupExists(int id);
  Status InsertEntities(int group_id, const std::vector<std::string>& entities);
  Result<std::vector<std::string>> EntitiesOf(int group_id);
  Result<JobRow> ReadJob(const Stmt& s);
};

}  // namespace gpulse::agent
