// The agent's state database's rows (state_db.h): groups and their entities, watches, the spilled
// history, management rows (health, policy, config) and meta values, each change one transaction.
// Jobs are in state_db_jobs.cc; opening, the schema and its migrations in state_db_open.cc.
#include "agent/state_db.h"

#include <sqlite3.h>

#include <charconv>
#include <climits>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/state_db_sql.h"

namespace gpulse::agent {
namespace {

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

Result<bool> StateDb::Impl::GroupExists(int id) {
  Stmt s(db, path);
  if (auto st = s.Prepare("SELECT 1 FROM groups WHERE id = ?1"); !st) return st.error();
  s.Int(1, id);
  return s.Step();
}

Status StateDb::Impl::InsertEntities(int group_id, const std::vector<std::string>& entities) {
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

Result<std::vector<std::string>> StateDb::Impl::EntitiesOf(int group_id) {
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
