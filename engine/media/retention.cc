#include "engine/media/retention.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace stripeback::engine {

std::string RetentionPolicy::str() const {
  switch (kind) {
    case Kind::redundancy:
      return "redundancy " + std::to_string(redundancy);
    case Kind::window: {
      std::ostringstream o;
      o << "recovery-window " << window_days;
      return o.str();
    }
    case Kind::none:
      break;
  }
  return "none";
}

Result<RetentionPolicy> parse_policy(const std::string& text) {
  std::istringstream in(text);
  std::string kind, value, extra;
  in >> kind >> value >> extra;
  auto bad = [&](const std::string& why) {
    return fail(Errc::invalid_argument,
                "retention policy '" + text + "': " + why +
                    " (expected 'redundancy N' with N >= 1, or 'recovery-window DAYS' with "
                    "DAYS >= 0)");
  };
  if (!extra.empty()) return bad("too many words");
  RetentionPolicy p;
  if (kind == "none" && value.empty()) return p;
  if (value.empty()) return bad("no value");
  size_t used = 0;
  try {
    if (kind == "redundancy") {
      unsigned long n = std::stoul(value, &used);
      if (used != value.size() || n < 1 || n > 1000000 || value[0] == '-') return bad("bad N");
      p.kind = RetentionPolicy::Kind::redundancy;
      p.redundancy = static_cast<uint32_t>(n);
      return p;
    }
    if (kind == "recovery-window") {
      auto d = parse_days(value, "recovery-window");
      if (!d) return bad(d.error().what);
      p.kind = RetentionPolicy::Kind::window;
      p.window_days = *d;
      return p;
    }
  } catch (const std::exception&) {
    return bad("'" + value + "' is not a number");
  }
  return bad("unknown kind '" + kind + "'");
}

Result<double> parse_days(const std::string& text, const std::string& what) {
  double d = -1;
  try {
    size_t used = 0;
    d = std::stod(text, &used);
    if (used != text.size()) d = -1;
  } catch (...) {
    d = -1;
  }
  if (!(d >= 0) || d > kMaxDays)
    return fail(Errc::invalid_argument, what + ": '" + text + "' is not a number of days from 0 to " +
                                            std::to_string(static_cast<int>(kMaxDays)));
  return d;
}

std::vector<ObsoleteBackup> find_obsolete(
    const std::vector<catalog::Backup>& backups, const RetentionPolicy& policy, int64_t now_ns,
    const std::function<bool(const catalog::Backup&)>& running, double resume_window_days) {
  // Restorable backups, newest first.
  std::vector<const catalog::Backup*> order;
  std::map<uint64_t, const catalog::Backup*> by_id;
  for (const auto& b : backups) {
    by_id[b.id] = &b;
    if (b.usable()) order.push_back(&b);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    if (a->begin.start_time_ns != b->begin.start_time_ns)
      return a->begin.start_time_ns > b->begin.start_time_ns;
    return a->id > b->id;
  });
  // Per file path: the backups holding it, newest first, and whether the copy is whole.
  struct Copy {
    const catalog::Backup* b;
    const catalog::FileRecord* f;
  };
  std::map<std::string, std::vector<Copy>> copies;
  for (const auto* b : order)
    for (const auto& f : b->files) copies[f.path].push_back({b, &f});

  const int64_t window_start =
      now_ns - static_cast<int64_t>(policy.window_days * 86400.0 * 1e9);
  std::set<uint64_t> keep;
  for (const auto& [path, list] : copies) {
    keep.insert(list.front().b->id);  // the newest copy, whatever the policy
    if (policy.kind == RetentionPolicy::Kind::redundancy) {
      uint32_t whole = 0;
      for (const Copy& c : list) {
        keep.insert(c.b->id);
        const bool is_whole = c.f->change == catalog::FileChange::whole && !c.f->held_by;
        if (is_whole && ++whole == policy.redundancy) break;
      }
    } else if (policy.kind == RetentionPolicy::Kind::window) {
      for (const Copy& c : list) {
        keep.insert(c.b->id);
        if (c.b->begin.start_time_ns < window_start) break;  // the restore point at its start
      }
    } else {
      for (const Copy& c : list) keep.insert(c.b->id);  // no policy: nothing is obsolete
    }
  }
  // What the operator keeps (stripeback keep), until its date or forever.
  for (const auto& b : backups)
    if (b.kept_at(now_ns)) keep.insert(b.id);
  // What kept backups depend on, transitively.
  std::vector<uint64_t> unvisited(keep.begin(), keep.end());
  while (!unvisited.empty()) {
    uint64_t id = unvisited.back();
    unvisited.pop_back();
    auto it = by_id.find(id);
    if (it == by_id.end()) continue;
    for (const auto& f : it->second->files)
      for (uint64_t dep : {f.parent, f.held_by})
        if (dep && keep.insert(dep).second) unvisited.push_back(dep);
  }
  std::vector<ObsoleteBackup> out;
  for (const auto& b : backups) {
    if (keep.count(b.id) || b.deleting) continue;
    if (b.damaged() || b.expired()) continue;
    if (!b.ended) {
      if (running(b)) continue;
      const int64_t resumable_until =
          b.begin.start_time_ns + static_cast<int64_t>(resume_window_days * 86400.0 * 1e9);
      if (!b.begin_missing && now_ns < resumable_until) continue;  // backup --resume may finish it
      out.push_back({b.id, "its job died before it ended and its resume window has passed "
                           "(its pieces are orphans)"});
      continue;
    }
    if (b.end.status == catalog::BackupStatus::failed) {
      out.push_back({b.id, "it failed"});
      continue;
    }
    if (policy.kind == RetentionPolicy::Kind::none) continue;
    out.push_back({b.id, policy.kind == RetentionPolicy::Kind::redundancy
                             ? "newer backups hold " + std::to_string(policy.redundancy) +
                                   " whole copies of each of its files"
                             : "a restore to any moment of the recovery window needs none of "
                               "its files"});
  }
  return out;
}

}  // namespace stripeback::engine
