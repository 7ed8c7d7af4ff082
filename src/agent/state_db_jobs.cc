// The agent's state database's jobs (state_db.h): a job's row from `stats -s` to its statistics,
// its notes stored as a JSON array of strings within the database's bounds.
#include <sqlite3.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agent/state_db.h"
#include "agent/state_db_sql.h"
#include "core/json_limits.h"

namespace gpulse::agent {
namespace {

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

// A job's six columns as both StartJob's INSERT and PutJob's UPDATE number them (?1 is the id).
void BindJob(Stmt& s, const JobRow& job, const std::string& notes) {
  s.Text(1, job.id).Int(2, job.group_id).Int(3, job.start_unix_ns);
  if (job.stop_unix_ns) {
    s.Int(4, *job.stop_unix_ns);
  } else {
    s.Null(4);
  }
  s.Text(5, job.stats_json).Text(6, notes);
}

}  // namespace

Result<JobRow> StateDb::Impl::ReadJob(const Stmt& s) {
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
    BindJob(ins, job, *notes);
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
    BindJob(up, job, *notes);
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

}  // namespace gpulse::agent
