#include "engine/backup/planner.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "engine/wiring/backends.h"
#include "util/option_words.h"

namespace stripeback::engine {
namespace fs = std::filesystem;
using storage::has_scheme;

namespace {

const char* kind_of(mode_t m) {
  if (S_ISLNK(m)) return "symbolic link";
  if (S_ISSOCK(m)) return "socket";
  if (S_ISFIFO(m)) return "fifo";
  if (S_ISCHR(m)) return "character device";
  if (S_ISBLK(m)) return "block device";
  return "special file";
}

FileTask task_from(const std::string& path, const storage::FileInfo& st) {
  FileTask t;
  t.path = path;
  t.size = st.size;
  t.mode = st.mode;
  t.mtime_ns = st.mtime_ns;
  t.uid = st.uid;
  t.gid = st.gid;
  t.ctime_ns = st.ctime_ns;
  t.ino = st.ino;
  return t;
}

// Directory entries, each as its name and its location text, on whatever storage holds
// the directory.
Result<std::vector<std::pair<std::string, std::string>>> children_of(const std::string& dir) {
  SB_ASSIGN(Place place, place_of(dir));
  SB_ASSIGN(auto names, place.storage->list(place.at));
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& n : names) out.emplace_back(n, place.at.join(n).str());
  return out;
}

Result<storage::FileInfo> stat_of(const std::string& path, bool follow) {
  SB_ASSIGN(Place place, place_of(path));
  return place.storage->stat(place.at, follow);
}

class Walker {
 public:
  Walker(Plan& plan, const PlanOptions& opts) : plan_(plan), opts_(opts) {}

  void add_file(const std::string& path, const storage::FileInfo& st) {
    if (!seen_.insert(path).second) return;
    plan_.files.push_back(task_from(path, st));
  }

  // A source directory: its file system is the one --one-file-system keeps to.
  void walk_source(const std::string& dir, const storage::FileInfo& dst) {
    if (auto kind = pseudo_kind(dir, dst)) {
      plan_.skipped.push_back({dir, *kind});
      return;
    }
    walk_dir(dir, dst, "");
  }

 private:
  // Why a local directory on a pseudo file system is not walked; nullopt for the others.
  static std::optional<std::string> pseudo_kind(const std::string& dir, const storage::FileInfo& st) {
    auto place = place_of(dir);
    if (!place) return std::nullopt;  // reported where the directory is read
    auto name = place->storage->pseudo_file_system(place->at, st);
    if (!name) return std::nullopt;
    return *name + " pseudo file system (kernel state, not files to back up)";
  }

  // Why the directory `child` of a directory on device `parent_dev` is not walked, if it is
  // a mount point of a file system that is left alone.
  std::optional<std::string> mount_point_skip(const std::string& child, const storage::FileInfo& st,
                                              uint64_t parent_dev) const {
    if (st.dev == parent_dev || has_scheme(child)) return std::nullopt;
    if (opts_.one_file_system) return "mount point of another file system (" +
                                    util::option_word("one_file_system") + ")";
    return pseudo_kind(child, st);
  }

  // Whether the rules leave out the entry at `rel` below its source (recorded if so).
  bool excluded(const std::string& child, const std::string& rel, bool is_dir) {
    if (!opts_.rules || !opts_.rules->match(rel, is_dir)) return false;
    plan_.excluded.push_back(child);
    return true;
  }

  // `rel`: the directory's path relative to its source ("" for the source).
  void walk_dir(const std::string& dir, const storage::FileInfo& dst, const std::string& rel) {
    if (!seen_.insert(dir).second) return;
    plan_.dirs.push_back(task_from(dir, dst));
    auto listed = children_of(dir);
    if (!listed) {
      if (opts_.skip_unreadable) plan_.skipped.push_back({dir, "unreadable directory: " + listed.error().what});
      else unreadable_.push_back(listed.error().what);
      return;
    }
    auto children = std::move(*listed);
    std::sort(children.begin(), children.end(),
              [](const auto& a, const auto& b) { return a.second < b.second; });
    for (const auto& [name, child] : children) {
      if (opts_.exclude && opts_.exclude(child)) continue;
      const std::string child_rel = rel.empty() ? name : rel + "/" + name;
      if (excluded(child, child_rel, false)) continue;
      auto got = stat_of(child, /*follow=*/false);
      if (!got) {
        plan_.skipped.push_back({child, "cannot stat: " + got.error().what});
        continue;
      }
      const storage::FileInfo& st = *got;
      if (S_ISREG(st.mode)) {
        add_file(child, st);
      } else if (S_ISDIR(st.mode)) {
        if (excluded(child, child_rel, true)) continue;
        auto why = mount_point_skip(child, st, dst.dev);
        if (why) plan_.skipped.push_back({child, *why});
        else walk_dir(child, st, child_rel);
      } else {
        plan_.skipped.push_back({child, kind_of(static_cast<mode_t>(st.mode))});
      }
    }
  }

  Plan& plan_;
  const PlanOptions& opts_;
  std::set<std::string> seen_;

 public:
  std::vector<std::string> unreadable_;  // directories that could not be listed: why
};

}  // namespace

Result<Plan> make_plan(const std::vector<std::string>& sources, const PlanOptions& opts) {
  if (sources.empty()) return fail(Errc::invalid_argument, "no backup source given");
  Plan plan;
  Walker walker(plan, opts);
  for (const auto& src : sources) {
    std::string path = storage::normal_path(src);
    // A named source may be a symbolic link to what the user means (as with cp -H and
    // find -H); below it links are not followed.
    auto got = stat_of(path, /*follow=*/true);
    if (!got) {
      Error e = got.error().wrap("backup source '" + src + "' is not usable");
      // A URL that names nothing reachable is bad input, like a missing local path.
      if (has_scheme(path) && e.code != Errc::timed_out) e.code = Errc::invalid_argument;
      return e;
    }
    const storage::FileInfo& st = *got;
    if (S_ISREG(st.mode)) walker.add_file(path, st);
    else if (S_ISDIR(st.mode)) walker.walk_source(path, st);
    else
      return fail(Errc::invalid_argument, "backup source '" + src + "' is a " +
                                              kind_of(static_cast<mode_t>(st.mode)) +
                                              ", not a regular file or directory");
  }
  if (!walker.unreadable_.empty()) {
    std::string what = walker.unreadable_.front();
    if (walker.unreadable_.size() > 1)
      what += " (and " + std::to_string(walker.unreadable_.size() - 1) +
              " more unreadable directories)";
    return fail(Errc::io, what + ": nothing was backed up (give " + util::option_word("skip_unreadable") +
                                 " to back up the rest and record what was skipped)");
  }
  std::sort(plan.files.begin(), plan.files.end(), [](const FileTask& a, const FileTask& b) {
    return a.size != b.size ? a.size > b.size : a.path < b.path;
  });
  for (const auto& f : plan.files) plan.total_bytes += f.size;
  return plan;
}

namespace {

// make_sets() for some of the files (in the caller's order): sets largest first.
std::vector<WorkSet> sets_of(const std::vector<const FileTask*>& files, const SetOptions& opts) {
  std::vector<WorkSet> sets;
  std::vector<const FileTask*> whole;
  uint64_t align = std::max<uint64_t>(1, opts.align);
  for (const FileTask* f : files) {
    if (opts.section_size == 0 || f->size <= opts.section_size) {
      whole.push_back(f);
      continue;
    }
    uint64_t section = std::max(align, opts.section_size / align * align);
    auto n = static_cast<uint32_t>((f->size + section - 1) / section);
    for (uint32_t i = 0; i < n; ++i) {
      uint64_t off = section * i;
      sets.push_back(WorkSet{WorkUnit{f, off, std::min(section, f->size - off), i, n}});
    }
  }
  if (!whole.empty()) {
    uint32_t per_set = std::max<uint32_t>(1, opts.files_per_set);
    size_t n = std::max<size_t>((whole.size() + per_set - 1) / per_set,
                                std::min<size_t>(std::max<uint32_t>(1, opts.channels), whole.size()));
    std::vector<WorkSet> groups(n);
    std::vector<uint64_t> bytes(n, 0);
    // Largest first into the lightest set that still has room: balanced by bytes.
    std::vector<const FileTask*> by_size = whole;
    std::stable_sort(by_size.begin(), by_size.end(),
                     [](const FileTask* a, const FileTask* b) { return a->size > b->size; });
    for (const FileTask* f : by_size) {
      size_t best = n;
      for (size_t g = 0; g < n; ++g)
        if (groups[g].size() < per_set && (best == n || bytes[g] < bytes[best])) best = g;
      groups[best].push_back(WorkUnit{f, 0, f->size, 0, 1});
      bytes[best] += f->size;
    }
    // Within a set, keep the caller's order.
    std::map<const FileTask*, size_t> order;
    for (size_t i = 0; i < whole.size(); ++i) order[whole[i]] = i;
    for (auto& g : groups)
      std::sort(g.begin(), g.end(), [&](const WorkUnit& a, const WorkUnit& b) {
        return order[a.file] < order[b.file];
      });
    for (auto& g : groups) sets.push_back(std::move(g));
  }
  auto total = [](const WorkSet& s) {
    uint64_t t = 0;
    for (const auto& u : s) t += u.length;
    return t;
  };
  std::stable_sort(sets.begin(), sets.end(),
                   [&](const WorkSet& a, const WorkSet& b) { return total(a) > total(b); });
  return sets;
}

}  // namespace

std::vector<WorkSet> make_sets(const std::vector<FileTask>& files, const SetOptions& opts) {
  std::map<int64_t, std::vector<const FileTask*>> groups;  // oldest first
  const bool known = opts.last_backup.size() == files.size();
  for (size_t i = 0; i < files.size(); ++i)
    groups[known ? opts.last_backup[i] : 0].push_back(&files[i]);
  std::vector<WorkSet> sets;
  for (const auto& [when, group] : groups) {
    auto more = sets_of(group, opts);
    sets.insert(sets.end(), std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.end()));
  }
  return sets;
}

}  // namespace stripeback::engine
