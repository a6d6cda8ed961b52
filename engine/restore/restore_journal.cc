#include "engine/restore/restore_journal.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <thread>

#include "engine/restore/delta_undo.h"
#include "engine/restore/restore_job.h"
#include "util/process.h"

namespace stripeback::engine {
namespace {

constexpr const char* kMagic = "stripeback-restore-journal 1\n";
constexpr size_t kRandomDigits = 16;
constexpr size_t kMaxJournal = 64u << 20;
// How long a journal with no header yet must stay so before it is taken for the leftover
// of a restore killed as it started.
constexpr std::chrono::milliseconds kStartPause{250};

struct Owner {
  std::string host;
  pid_t pid = 0;
  uint64_t start = 0;
};

std::string header_of(const Owner& o) {
  return std::string(kMagic) + "host=" + o.host + "\npid=" + std::to_string(o.pid) +
         "\nstart=" + std::to_string(o.start) + "\n\n";
}

// Parses a journal: its owner and the temporaries it lists. False when it is not one.
bool parse(const std::string& text, Owner* owner, std::vector<std::string>* temps) {
  if (text.compare(0, std::char_traits<char>::length(kMagic), kMagic) != 0) return false;
  size_t end = text.find("\n\n");
  if (end == std::string::npos) return false;
  size_t pos = std::char_traits<char>::length(kMagic);
  while (pos < end) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    try {
      if (line.rfind("host=", 0) == 0) owner->host = line.substr(5);
      else if (line.rfind("pid=", 0) == 0) owner->pid = std::stoi(line.substr(4));
      else if (line.rfind("start=", 0) == 0) owner->start = std::stoull(line.substr(6));
    } catch (...) {
      return false;
    }
  }
  pos = end + 2;
  while (pos < text.size()) {
    size_t z = text.find('\0', pos);
    if (z == std::string::npos) break;  // an entry cut short by the kill: never created
    temps->push_back(text.substr(pos, z - pos));
    pos = z + 1;
  }
  return true;
}

// Reads a journal, opened without following a link. With `owner`, a journal that is not a
// regular file with one link, owned by that uid and writable by no one else is not read:
// the error says why (a journal directs what a restore writes, so only its own are trusted).
Result<std::string> read_journal(storage::Directory& root, const std::string& name,
                                 std::optional<uint32_t> owner) {
  const std::string shown = root.location().join(name).str();
  if (owner) {  // nothing but a regular file is opened (a FIFO or a device could block)
    SB_ASSIGN(storage::FileInfo st, root.stat(name));
    if (!S_ISREG(st.mode))
      return fail(Errc::invalid_argument,
                  "restore journal '" + shown + "' is not a regular file; left alone");
  }
  SB_ASSIGN(auto f, root.open(name, {false}));
  if (owner) {
    SB_ASSIGN(storage::FileInfo st, f->stat());
    if (auto why = distrust(st, owner, true); !why.empty())
      return fail(Errc::invalid_argument, "restore journal '" + shown + "' " + why +
                                              "; not trusted, left alone");
  }
  std::string text;
  std::vector<std::byte> buf(1u << 20);
  uint64_t off = 0;
  while (text.size() < kMaxJournal) {
    SB_ASSIGN(size_t n, f->read_at(buf.data(), buf.size(), off));
    if (n == 0) break;
    text.append(reinterpret_cast<const char*>(buf.data()), n);
    off += n;
  }
  return text;
}

// Removes one listed temporary if it is still a regular file of the temporary form,
// walking to it without following links or creating anything. True when it was removed.
bool remove_temp(storage::Directory& root, const std::string& rel) {
  auto comps = safe_components("/" + rel);
  if (!comps || !is_restore_temp_name(comps->back())) return false;
  std::unique_ptr<storage::Directory> sub;
  storage::Directory* dir = &root;
  for (size_t i = 0; i + 1 < comps->size(); ++i) {
    auto next = dir->open_dir((*comps)[i], /*create=*/false);
    if (!next) return false;
    sub = std::move(*next);
    dir = sub.get();
  }
  // A hard link is left alone too: this restore's predecessor made each temporary new.
  auto st = dir->stat(comps->back());
  if (!st || !distrust(*st, std::nullopt, false).empty()) return false;
  return dir->remove(comps->back()).has_value();
}

// A file a killed delta restore was updating: put back as it was when it is still under its
// temporary name (its undo log is complete then: the log is durable before the rename), and
// its undo log removed. Returns a message when there was something to do.
std::string recover_delta(storage::Directory& root, const std::string& entry, bool set_owner,
                          uint32_t owner) {
  // The same components a restore's paths have, each passing safe_component().
  auto split = safe_components(entry);
  if (!split || split->size() < 3) return "";
  const std::vector<std::string>& comps = *split;
  const std::string final = comps.back();
  const std::string undo = comps[comps.size() - 2];
  const std::string temp = comps[comps.size() - 3];
  if (!is_restore_temp_name(temp) || !is_restore_temp_name(undo)) return "";
  std::unique_ptr<storage::Directory> sub;
  storage::Directory* dir = &root;
  std::string rel;
  for (size_t k = 0; k + 3 < comps.size(); ++k) {
    auto next = dir->open_dir(comps[k], /*create=*/false);
    if (!next) return "";
    sub = std::move(*next);
    dir = sub.get();
    rel += comps[k] + "/";
  }
  const std::string shown = root.location().join(rel + final).str();
  auto t = dir->stat(temp);
  auto u = dir->stat(undo);
  if (t && S_ISREG(t->mode) && u && S_ISREG(u->mode)) {
    if (auto r = roll_back_delta(*dir, temp, undo, final, set_owner, owner); !r)
      return r.error().what + " (it is kept as '" + root.location().join(rel + temp).str() +
             "', its undo log as '" + undo + "')";
    return "put '" + shown + "' back as it was before an interrupted delta restore";
  }
  if (u && distrust(*u, owner, true).empty()) (void)dir->remove(undo);
  return "";
}

Result<std::vector<std::string>> list_journals(storage::Directory& root) {
  SB_ASSIGN(auto names, root.list());
  std::vector<std::string> out;
  for (auto& n : names)
    if (n.rfind(kRestoreJournalPrefix, 0) == 0) out.push_back(std::move(n));
  return out;
}

std::string shown_in(const storage::Directory& root, const std::string& name) {
  return root.location().join(name).str();
}

}  // namespace

std::string restore_temp_name() {
  return kRestoreTempPrefix + util::random_hex(kRandomDigits / 2);
}

bool is_restore_temp_name(const std::string& name) {
  std::string prefix = kRestoreTempPrefix;
  if (name.size() != prefix.size() + kRandomDigits || name.rfind(prefix, 0) != 0) return false;
  for (size_t i = prefix.size(); i < name.size(); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

RestoreJournal::~RestoreJournal() = default;

Result<std::unique_ptr<RestoreJournal>> RestoreJournal::create(storage::Directory& root) {
  std::unique_ptr<RestoreJournal> j(new RestoreJournal());
  j->root_ = &root;
  Owner me{util::hostname(), ::getpid(), util::process_start_ticks(::getpid())};
  std::string head = header_of(me);
  for (int attempt = 0; attempt < 8; ++attempt) {
    j->name_ = kRestoreJournalPrefix + util::random_hex(kRandomDigits / 2);
    j->path_ = shown_in(root, j->name_);
    auto made = root.create(j->name_, {false, 0600});
    if (!made && made.error().code == Errc::exists) continue;
    if (!made) return made.error().wrap("unable to create restore journal");
    j->file_ = std::move(*made);
    SB_TRY(j->file_->write_at(reinterpret_cast<const std::byte*>(head.data()), head.size(), 0));
    j->offset_ = head.size();
    // Another restore may have taken the journal, still empty, for a leftover and removed
    // it (clean_restore_leftovers): then this one starts again under a new name.
    if (auto st = root.stat(j->name_); !st && st.error().code == Errc::not_found) {
      j->file_.reset();
      continue;
    }
    return j;
  }
  return fail(Errc::exists, "unable to find a free restore journal name in '" +
                                root.location().str() + "'");
}

Result<void> RestoreJournal::note(const std::vector<std::string>& rel) {
  std::string entry;
  for (const auto& c : rel) entry += (entry.empty() ? "" : "/") + c;
  return append(entry);
}

Result<void> RestoreJournal::note_delta(const std::vector<std::string>& dir,
                                        const std::string& temp, const std::string& undo,
                                        const std::string& final) {
  std::string entry;
  for (const auto& c : dir) entry += "/" + c;
  entry += "/" + temp + "/" + undo + "/" + final;
  return append(entry);
}

Result<void> RestoreJournal::append(std::string entry) {
  entry.push_back('\0');
  std::lock_guard lock(mu_);
  SB_TRY(file_->write_at(reinterpret_cast<const std::byte*>(entry.data()), entry.size(), offset_));
  offset_ += entry.size();
  ++open_temps_;
  return ok();
}

void RestoreJournal::settle() {
  std::lock_guard lock(mu_);
  if (open_temps_ > 0) --open_temps_;
}

std::string RestoreJournal::finish() {
  std::lock_guard lock(mu_);
  if (file_) (void)file_->close();
  file_.reset();
  if (open_temps_ > 0)
    return "restore journal '" + path_ + "' is kept: " + std::to_string(open_temps_) +
           " temporary file(s) could not be removed; the next restore into this target "
           "removes them";
  if (auto r = root_->remove(name_); !r) return r.error().what;
  return "";
}

std::vector<std::string> clean_restore_leftovers(storage::Directory& root, bool set_owner,
                                                 const RestoreJournal& own) {
  std::vector<std::string> out;
  // The owner this restore's files get on this medium: only journals and undo logs of that
  // owner are trusted.
  auto me = root.stat(own.name());
  if (!me) {
    out.push_back(me.error().wrap("unable to clean up after interrupted restores").what);
    return out;
  }
  const uint32_t my_uid = me->uid;
  auto journals = list_journals(root);
  if (!journals) {
    out.push_back(journals.error().what);
    return out;
  }
  for (const auto& name : *journals) {
    if (name == own.name()) continue;
    std::string path = shown_in(root, name);
    auto text = read_journal(root, name, my_uid);
    Owner owner;
    std::vector<std::string> temps;
    if (!text) {
      out.push_back(text.error().what);
      continue;
    }
    if (!parse(*text, &owner, &temps)) {
      // A restore killed between creating its journal and writing the header leaves it
      // empty or cut short. One still starting writes its header within microseconds of
      // the create (and checks afterwards that its journal is still there, see create()),
      // so a journal that stays cut short across a pause is taken for a leftover.
      std::string magic = kMagic;
      auto cut_short = [&](const std::string& t) {
        return t.size() < magic.size() && magic.compare(0, t.size(), t) == 0;
      };
      if (!cut_short(*text)) {
        out.push_back("'" + path + "' is not a restore journal; left alone");
        continue;
      }
      auto st = root.stat(name);
      bool old_enough = st && S_ISREG(st->mode) &&
                        st->mtime_ns / 1000000000 + 60 < static_cast<int64_t>(::time(nullptr));
      if (!old_enough) {
        std::this_thread::sleep_for(kStartPause);
        auto again = read_journal(root, name, my_uid);
        if (!again || *again != *text) continue;  // gone, or being written: a live restore
      }
      bool gone = root.remove(name).has_value();
      out.push_back(gone ? "removed the empty journal '" + path +
                               "' of a restore killed as it started"
                         : "unable to remove the empty restore journal '" + path + "'");
      continue;
    }
    if (util::process_alive(owner.host, owner.pid, owner.start)) {
      if (owner.host != util::hostname())
        out.push_back("restore journal '" + path + "' belongs to a restore on host '" +
                      owner.host + "' that may still be running; left alone");
      continue;  // a restore running now into the same target: its files are its own
    }
    size_t removed = 0;
    bool kept = false;
    for (const auto& rel : temps) {
      if (rel.empty() || rel[0] != '/') {
        removed += remove_temp(root, rel) ? 1 : 0;
        continue;
      }
      std::string said = recover_delta(root, rel, set_owner, my_uid);
      if (said.empty()) continue;
      kept = kept || said.rfind("unable", 0) == 0;
      out.push_back(std::move(said));
    }
    // A file that could not be put back keeps its journal entry for the next restore.
    bool gone = !kept && root.remove(name).has_value();
    out.push_back("removed " + std::to_string(removed) +
                  " temporary file(s) left by an interrupted restore (pid " +
                  std::to_string(owner.pid) + ")" +
                  (gone ? "" : "; its journal '" + path + "' could not be removed"));
  }
  return out;
}

}  // namespace stripeback::engine
