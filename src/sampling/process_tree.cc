#include "sampling/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <unordered_set>

namespace gpulse::sampling {
namespace {

template <typename T>
bool ParseNumber(std::string_view s, T& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

// Splits off the next space-separated token.
std::string_view NextToken(std::string_view& s) {
  std::size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string_view::npos) {
    s = {};
    return {};
  }
  s.remove_prefix(b);
  std::size_t e = s.find_first_of(" \t\n");
  std::string_view tok = s.substr(0, e);
  s.remove_prefix(e == std::string_view::npos ? s.size() : e);
  return tok;
}

// One pread per file and tick: procfs generates these files whole on each read, so a read that
// leaves room in the buffer has returned all of it (no second read to learn of the end); only a
// full buffer is read on.
bool PreadAll(int fd, std::string& out) {
  out.resize(out.capacity() < 4096 ? 4096 : out.capacity());
  std::size_t len = 0;
  for (;;) {
    if (len == out.size()) out.resize(out.size() * 2);
    ssize_t n = pread(fd, out.data() + len, out.size() - len, static_cast<off_t>(len));
    if (n < 0) return false;
    len += static_cast<std::size_t>(n);
    if (n == 0 || len < out.size()) break;
  }
  out.resize(len);
  return true;
}

}  // namespace

Result<ProcStats> ParseStat(std::string_view text) {
  // The command name may contain spaces and parentheses: fields start after the last ')'.
  std::size_t open = text.find('(');
  std::size_t close = text.rfind(')');
  if (close == std::string_view::npos || open == std::string_view::npos || open > close) {
    return InvalidArgument("missing ')' after the command name");
  }
  std::string_view rest = text.substr(close + 1);
  // Field numbers as in proc(5): 3 state, 4 ppid, 14 utime, 15 stime, 16 cutime, 17 cstime,
  // 20 num_threads, 24 rss.
  std::string_view f[22];
  int n = 0;
  while (n < 22) {
    std::string_view tok = NextToken(rest);
    if (tok.empty()) break;
    f[n++] = tok;
  }
  if (n < 22) return InvalidArgument("too few fields");
  ProcStats p;
  p.name = std::string(text.substr(open + 1, close - open - 1));
  p.zombie = f[0] == "Z" || f[0] == "X";
  if (!ParseNumber(f[1], p.ppid)) return InvalidArgument("invalid ppid");
  if (!ParseNumber(f[11], p.utime_jiffies)) return InvalidArgument("invalid utime");
  if (!ParseNumber(f[12], p.stime_jiffies)) return InvalidArgument("invalid stime");
  // cutime and cstime are signed in proc(5) (clock_t); never negative in practice.
  long long cu = 0, cs = 0;
  if (!ParseNumber(f[13], cu)) return InvalidArgument("invalid cutime");
  if (!ParseNumber(f[14], cs)) return InvalidArgument("invalid cstime");
  p.cutime_jiffies = cu > 0 ? static_cast<std::uint64_t>(cu) : 0;
  p.cstime_jiffies = cs > 0 ? static_cast<std::uint64_t>(cs) : 0;
  if (!ParseNumber(f[17], p.threads)) return InvalidArgument("invalid num_threads");
  long long rss = 0;
  if (!ParseNumber(f[21], rss)) return InvalidArgument("invalid rss");
  p.rss_pages = rss > 0 ? static_cast<std::uint64_t>(rss) : 0;
  return p;
}

Result<std::vector<pid_t>> ParseChildren(std::string_view text) {
  std::vector<pid_t> out;
  for (std::string_view tok = NextToken(text); !tok.empty(); tok = NextToken(text)) {
    pid_t pid = 0;
    if (!ParseNumber(tok, pid) || pid <= 0) return InvalidArgument("invalid child pid \"" + std::string(tok) + "\"");
    out.push_back(pid);
  }
  return out;
}

ProcessTreeSampler::ProcessTreeSampler(std::string proc_root, pid_t pid, bool include_descendants,
                                       unsigned discover_every)
    : root_(std::move(proc_root)), pid_(pid), descendants_(include_descendants),
      discover_every_(discover_every == 0 ? 1 : discover_every),
      page_size_(static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE))) {}

ProcessTreeSampler::~ProcessTreeSampler() {
  for (auto& [pid, o] : open_) Close(o);
}

void ProcessTreeSampler::Close(Open& o) {
  for (int fd : o.children_fds) close(fd);
  if (o.stat_fd >= 0) close(o.stat_fd);
  if (o.dir_fd >= 0) close(o.dir_fd);
  o = Open{};
}

ProcessTreeSampler::Open* ProcessTreeSampler::Get(pid_t pid) {
  auto it = open_.find(pid);
  if (it == open_.end()) {
    Open o;
    std::string dir = root_ + "/" + std::to_string(pid);
    o.dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (o.dir_fd < 0) return nullptr;
    o.stat_fd = openat(o.dir_fd, "stat", O_RDONLY | O_CLOEXEC);
    if (o.stat_fd < 0) {
      Close(o);
      return nullptr;
    }
    it = open_.emplace(pid, std::move(o)).first;
  }
  it->second.tick = tick_;
  return &it->second;
}

Result<ProcStats> ProcessTreeSampler::ReadStats(Open& o) {
  if (!PreadAll(o.stat_fd, buf_)) return NotFound("stat: cannot read (process gone)");
  return ParseStat(buf_);
}

void ProcessTreeSampler::AppendChildren(Open& o, std::uint32_t threads, std::vector<pid_t>& out) {
  // List the tasks again when threads came or went, and every 5th listing in case one thread
  // replaced another.
  if (threads != o.tasks_seen || listings_ % 5 == 0) {
    for (int fd : o.children_fds) close(fd);
    o.children_fds.clear();
    int task_fd = openat(o.dir_fd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (task_fd < 0) return;
    DIR* d = fdopendir(task_fd);
    if (d == nullptr) {
      close(task_fd);
      return;
    }
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      std::string rel = std::string(e->d_name) + "/children";
      int fd = openat(dirfd(d), rel.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) o.children_fds.push_back(fd);
    }
    closedir(d);
    o.tasks_seen = threads;
  }
  for (int fd : o.children_fds) {
    if (!PreadAll(fd, buf_)) continue;  // that thread exited
    if (auto kids = ParseChildren(buf_)) out.insert(out.end(), kids->begin(), kids->end());
  }
}

void ProcessTreeSampler::Count(Open& o, const ProcStats& s, TreeTotals& t) {
  if (o.read) {
    o.cutime_before = o.last.cutime_jiffies;
    o.cstime_before = o.last.cstime_jiffies;
  } else {
    o.cutime_before = s.cutime_jiffies;  // what it reaped before we first saw it is not new
    o.cstime_before = s.cstime_jiffies;
  }
  auto busy = [](const ProcStats& x) {
    return x.utime_jiffies + x.stime_jiffies + x.cutime_jiffies + x.cstime_jiffies;
  };
  o.idle = o.read && busy(s) == busy(o.last);
  std::uint64_t rss = s.zombie ? o.last.rss_pages : s.rss_pages;
  std::uint32_t threads = s.zombie ? o.last.threads : s.threads;
  o.last.name = s.name;
  o.last.ppid = s.ppid;
  o.last.utime_jiffies = s.utime_jiffies;
  o.last.stime_jiffies = s.stime_jiffies;
  o.last.cutime_jiffies = s.cutime_jiffies;
  o.last.cstime_jiffies = s.cstime_jiffies;
  o.last.rss_pages = rss;
  o.last.threads = threads;
  o.read = true;
  t.rss_bytes += rss * page_size_;
  t.threads += threads;
  t.utime_jiffies += s.utime_jiffies + (descendants_ ? s.cutime_jiffies : 0);
  t.stime_jiffies += s.stime_jiffies + (descendants_ ? s.cstime_jiffies : 0);
  ++t.processes;
}

// A process gone from the tree took its utime+stime+cutime+cstime with it. Where its parent (or the
// nearest ancestor still in the tree) reaped it, that time appears in the parent's cutime/cstime.
// Reads within a tick are not one snapshot: the parent may have been read just before it reaped the
// child whose read then failed, so time not found this tick is held (pending_) and looked for once
// more at the ancestor's next reading; only then, or at once where no ancestor can still reap it
// (none in the tree, or a zombie), is it credited from the last reading.
void ProcessTreeSampler::Depart() {
  struct Owed {
    Cpu held, fresh;  // held since an earlier tick (found now or credited), departed this tick
  };
  std::unordered_map<pid_t, Owed> owed;  // per ancestor still in the tree (0: none)
  auto ancestor_of = [&](pid_t up) {
    for (int hops = 0; hops < 4096; ++hops) {  // climb over parents that left this tick too
      auto it = open_.find(up);
      if (it == open_.end()) return pid_t{0};
      if (it->second.tick == tick_) return up;
      up = it->second.last.ppid;
    }
    return pid_t{0};
  };
  for (auto& [pid, o] : open_) {
    if (!descendants_ || o.tick == tick_ || !o.read) continue;
    Owed& c = owed[ancestor_of(o.last.ppid)];
    c.fresh.user += o.last.utime_jiffies + o.last.cutime_jiffies;
    c.fresh.system += o.last.stime_jiffies + o.last.cstime_jiffies;
  }
  for (const auto& [holder, c] : pending_) {
    // A holder that left takes what it waits for up to its own ancestor, as new there: the time
    // may reach that ancestor's cutime only with the holder's, a tick later again.
    auto it = open_.find(holder);
    Cpu& to = it == open_.end()             ? owed[0].fresh
              : it->second.tick == tick_ ? owed[holder].held
                                         : owed[ancestor_of(it->second.last.ppid)].fresh;
    to.user += c.user;
    to.system += c.system;
  }
  pending_.clear();
  auto pay = [](std::uint64_t& want, std::uint64_t& found) {
    std::uint64_t paid = std::min(want, found);
    want -= paid;
    found -= paid;
  };
  for (auto& [ancestor, c] : owed) {
    Cpu found;
    bool can_reap_later = false;
    if (auto it = open_.find(ancestor); ancestor != 0 && it != open_.end()) {
      const Open& a = it->second;
      found.user = a.last.cutime_jiffies - std::min(a.last.cutime_jiffies, a.cutime_before);
      found.system = a.last.cstime_jiffies - std::min(a.last.cstime_jiffies, a.cstime_before);
      can_reap_later = !a.last.zombie;
    }
    pay(c.held.user, found.user);
    pay(c.held.system, found.system);
    pay(c.fresh.user, found.user);
    pay(c.fresh.system, found.system);
    credit_.user += c.held.user;
    credit_.system += c.held.system;
    if (can_reap_later && (c.fresh.user > 0 || c.fresh.system > 0)) {
      pending_[ancestor] = c.fresh;
    } else {
      credit_.user += c.fresh.user;
      credit_.system += c.fresh.system;
    }
  }
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.tick != tick_) {
      Close(it->second);
      it = open_.erase(it);
    } else {
      ++it;
    }
  }
}

Result<TreeTotals> ProcessTreeSampler::Read() {
  ++tick_;
  Open* root = Get(pid_);
  if (root == nullptr) return NotFound(root_ + "/" + std::to_string(pid_) + ": cannot open (process gone)");
  auto stats = ReadStats(*root);
  if (!stats) return Error{stats.error().code, root_ + "/" + std::to_string(pid_) + "/" + stats.error().message};
  TreeTotals t;
  Count(*root, *stats, t);
  if (descendants_) {
    bool discover = force_discover_ || discover_every_ == 1 || (tick_ - 1) % discover_every_ == 0 || stats->zombie;
    if (discover) {
      Discover(*root, *stats, t);
    } else {
      ReadKnown(t);
    }
  }
  force_discover_ = false;
  Depart();
  t.utime_jiffies += credit_.user;
  t.stime_jiffies += credit_.system;
  reported_.user = std::max(reported_.user, t.utime_jiffies);
  reported_.system = std::max(reported_.system, t.stime_jiffies);
  t.utime_jiffies = reported_.user;
  t.stime_jiffies = reported_.system;
  return t;
}

Result<TreeTotals> ProcessTreeSampler::ReadAndDiscover() {
  force_discover_ = true;
  return Read();
}

void ProcessTreeSampler::Discover(Open& root, const ProcStats& root_stats, TreeTotals& t) {
  ++listings_;
  std::vector<pid_t> queue;
  if (!root_stats.zombie) AppendChildren(root, root_stats.threads, queue);
  std::unordered_set<pid_t> seen{pid_};
  while (!queue.empty()) {
    pid_t pid = queue.back();
    queue.pop_back();
    if (!seen.insert(pid).second) continue;
    Open* o = Get(pid);
    if (o == nullptr) continue;  // exited between listing and reading: normal
    auto s = ReadStats(*o);
    if (!s) {
      o->tick = tick_ - 1;  // unreadable: treated as gone this tick
      continue;
    }
    Count(*o, *s, t);
    if (!s->zombie) AppendChildren(*o, s->threads, queue);
  }
}

void ProcessTreeSampler::ReadKnown(TreeTotals& t) {
  // Parents before their children: a child read after its parent had not been reaped when the
  // parent was read, so its time is not also in the parent's cutime of this tick.
  std::vector<std::pair<int, pid_t>> order;  // (depth, pid)
  std::unordered_set<pid_t> parents;
  for (const auto& [pid, o] : open_) {
    if (pid == pid_ || o.tick != tick_ - 1 || !o.read) continue;
    int depth = 0;
    for (pid_t up = o.last.ppid; up != pid_ && depth < 4096; ++depth) {
      auto it = open_.find(up);
      if (it == open_.end()) break;
      up = it->second.last.ppid;
    }
    order.emplace_back(depth, pid);
    parents.insert(o.last.ppid);
  }
  std::sort(order.begin(), order.end());
  for (auto [depth, pid] : order) {
    Open& o = open_.at(pid);
    // A parent is always read (a child's time must be found in its cutime the tick the child
    // leaves), and so is one waiting for a departed child's time (pending_). An idle leaf is carried
    // until the next listing while its parent, read this tick, has reaped nothing since its last
    // reading: a parent that reaped, or left itself, may have taken the leaf with it.
    if (o.idle && !o.last.zombie && !parents.contains(pid) && !pending_.contains(pid) && ParentReapedNothing(o)) {
      o.tick = tick_;
      ProcStats carried = o.last;
      Count(o, carried, t);
      continue;
    }
    auto s = ReadStats(o);  // a reaped process's open stat file fails: it has left
    if (!s) continue;
    o.tick = tick_;
    Count(o, *s, t);
  }
}

bool ProcessTreeSampler::ParentReapedNothing(const Open& o) const {
  auto it = open_.find(o.last.ppid);
  if (it == open_.end() || it->second.tick != tick_ || !it->second.read) return false;
  const Open& p = it->second;
  return p.last.cutime_jiffies == p.cutime_before && p.last.cstime_jiffies == p.cstime_before;
}

bool ProcessTreeSampler::InTree(pid_t pid) const {
  auto it = open_.find(pid);
  return it != open_.end() && it->second.tick == tick_ && it->second.read;
}

std::string ProcessTreeSampler::NameOf(pid_t pid) const {
  return InTree(pid) ? open_.at(pid).last.name : std::string();
}

}  // namespace gpulse::sampling
