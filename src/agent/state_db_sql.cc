// The state database's SQLite plumbing (state_db_sql.h): SQLite's errors and the bounds' refusals
// as values, and fixed SQL run through the C API.
#include "agent/state_db_sql.h"

#include <sqlite3.h>

#include <string>
#include <string_view>

namespace gpulse::agent {
namespace {

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

}  // namespace

std::string Quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

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

Status Exec(sqlite3* db, const std::string& path, const char* sql, const char* what) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (rc == SQLITE_OK) return Status::Ok();
  std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
  sqlite3_free(err);
  return Error{CodeOfSqlite(rc), path + ": " + (what != nullptr ? what : sql) + ": " + msg};
}

}  // namespace gpulse::agent
