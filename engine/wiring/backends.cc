#include "engine/wiring/backends.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>
#include <optional>

#include "backends/local/local_storage.h"
#include "storage/registry.h"
#include "util/units.h"
#if STRIPEBACK_TEST_HOOKS
#include "storage/fault_storage.h"
#endif
#if STRIPEBACK_WITH_NFS
#include "backends/nfs/backend.h"
#include "backends/nfs/options.h"
#endif
#if STRIPEBACK_WITH_S3
#include "backends/s3/backend.h"
#include "backends/s3/session.h"
#endif
#if STRIPEBACK_WITH_TAPE
#include "backends/tape/backend.h"
#include "backends/tape/tape_storage.h"
#include "backends/tape/volume.h"
#endif

namespace stripeback::engine {

Error left_out(const char* what, const char* option, const std::string& asked) {
  return Error{Errc::invalid_argument, ENOTSUP,
               std::string("this build has no ") + what + " support (" + option + "=OFF): " + asked};
}

namespace {

#if STRIPEBACK_WITH_TAPE
std::string strip(const std::string& url) {
  return url.rfind("tape:", 0) == 0 ? url.substr(5) : url;
}

// The next free tape file of each volume the catalog knows (after the last piece recorded
// on it); volumes it does not know start at file 1, right after the label.
tape::FirstFreeFile first_free_files(const catalog::Catalog& cat) {
  std::map<std::string, uint32_t> next;
  for (const auto& b : cat.backups())
    for (const auto& p : b.pieces)
      if (p.media)
        for (const auto& s : p.media->spans)
          next[s.volume_id] = std::max(next[s.volume_id], s.file + 1);
  return [next = std::move(next)](const std::string& volume_id) -> uint32_t {
    auto it = next.find(volume_id);
    return it == next.end() ? 1 : it->second;
  };
}
#endif

// A backend left out of this build (STRIPEBACK_WITH_NFS=OFF, ...): its locations still
// parse (as URLs of its form), and using one says which option left it out.
[[maybe_unused]] storage::Backend left_out_backend(std::string scheme, bool opaque, const char* what,
                                  const char* option, std::string example) {
  storage::Backend b;
  b.scheme = scheme;
  b.opaque = opaque;
  b.example = std::move(example);
  b.parse = [scheme, opaque](std::string_view text) -> Result<storage::Location> {
    if (!opaque) return storage::split_url(text, scheme);
    storage::Location loc;
    loc.scheme = scheme;
    loc.opaque = true;
    loc.authority = std::string(text.substr(scheme.size() + 1));
    return loc;
  };
  b.storage = [what, option](const storage::Location& at) -> Result<storage::Storage*> {
    return left_out(what, option, at.str());
  };
  return b;
}

// The backends built into this library, one line each.
void add_builtin_backends() {
  storage::Registry& r = storage::builtin_registry();
  r.add(io::local_backend());
#if STRIPEBACK_WITH_NFS
  r.add(nfs::backend());
#else
  r.add(left_out_backend("nfs", false, "NFS", "STRIPEBACK_WITH_NFS", "nfs://host/path"));
#endif
#if STRIPEBACK_WITH_TAPE
  r.add(tape::backend());
#else
  r.add(left_out_backend("tape", true, "tape", "STRIPEBACK_WITH_TAPE", "tape:..."));
#endif
#if STRIPEBACK_WITH_S3
  r.add(s3::backend());
#else
  r.add(left_out_backend("s3", false, "S3", "STRIPEBACK_WITH_S3", "s3://bucket/prefix"));
#endif
}

// Registered before main() runs in every program that links the engine.
const bool registered = (register_builtin_backends(), true);

#if STRIPEBACK_TEST_HOOKS
// The storages of a program run under faults (test_hooks::set_faults), or none: each
// registered storage that channels count, wrapped. Each set made is kept until exit:
// storages handed out point into it.
struct Wired {
  std::map<storage::Storage*, std::shared_ptr<storage::FaultStorage>> faulty;
};
std::mutex g_wired_mu;
std::vector<std::unique_ptr<const Wired>> g_wired_sets;
const Wired* g_wired = nullptr;

const Wired* wired() {
  std::lock_guard lock(g_wired_mu);
  return g_wired;
}
#endif

}  // namespace

void register_builtin_backends() {
  static std::once_flag once;
  std::call_once(once, add_builtin_backends);
}

Result<uint32_t> parse_media_block_size(std::string_view text) {
  auto v = util::parse_size(text);
  if (!v || *v == 0 || *v > 0xffffff)
    return fail(Errc::invalid_argument, "tape block size '" + std::string(text) +
                                            "' must be a size from 1 byte to 16 MiB - 1");
  return static_cast<uint32_t>(*v);
}

void allow_nfs_malloc_tuning() {
#if STRIPEBACK_WITH_NFS
  nfs::NfsOptions o = nfs::options();
  o.tune_malloc = true;
  nfs::set_options(o);
#endif
}

bool nfs_malloc_tuning() {
#if STRIPEBACK_WITH_NFS
  return nfs::options().tune_malloc;
#else
  return false;
#endif
}

void configure_s3(const S3Options& o) {
#if STRIPEBACK_WITH_S3
  s3::S3Flags f;
  f.endpoint = o.endpoint;
  f.region = o.region;
  f.profile = o.profile;
  f.url_style = o.url_style;
  f.ca_file = o.ca_file;
  f.checksum = o.checksum;
  f.storage_class = o.storage_class;
  f.sse = o.sse;
  f.sse_kms_key_id = o.sse_kms_key_id;
  f.part_size = o.part_size;
  f.parts_in_flight = o.parts_in_flight;
  f.attempt_timeout = o.timeout;
  f.attempts = o.attempts;
  s3::configure(std::move(f));
#else
  (void)o;
#endif
}

Result<storage::Storage*> storage_for(const storage::Location& at) {
  SB_ASSIGN(storage::Storage * st, storage::registered_storage(at));
#if STRIPEBACK_TEST_HOOKS
  if (const Wired* w = wired())
    if (auto it = w->faulty.find(st); it != w->faulty.end()) return it->second.get();
#endif
  return st;
}

Result<Place> place_of(const std::string& text) {
  SB_ASSIGN(storage::Location at, storage::Location::parse(text));
  SB_ASSIGN(storage::Storage * st, storage_for(at));
  return Place{st, std::move(at)};
}

std::vector<storage::CounterGroup> thread_counters(const std::vector<storage::Storage*>& also) {
  std::vector<storage::Storage*> all = storage::counted_storages();
  for (auto* s : also)
    if (s && std::find(all.begin(), all.end(), s) == all.end()) all.push_back(s);
  std::vector<storage::CounterGroup> out;
  for (auto* s : all)
    if (auto g = s->thread_counters(/*close_thread=*/true)) out.push_back(std::move(*g));
  return out;
}

Result<MediaDestination> open_media_destination(const MediaOptions& opts,
                                                const catalog::Catalog& cat) {
  if (opts.drives.empty()) return fail(Errc::invalid_argument, "no tape drive given");
#if !STRIPEBACK_WITH_TAPE
  (void)cat;
  return left_out("tape", "STRIPEBACK_WITH_TAPE", opts.drives.front());
#else
  MediaDestination d;
  auto first_free = first_free_files(cat);
  std::vector<std::string> spares;
  for (const auto& v : opts.volumes) spares.push_back(strip(v));
  d.labelled = std::make_shared<std::vector<LabelledVolume>>();
  auto labelled_mu = std::make_shared<std::mutex>();
  tape::BlankLabeling blank;
  blank.enabled = opts.label_blank;
  blank.labelled = [log = d.labelled, labelled_mu](const std::string& url, const std::string& id) {
    std::lock_guard lock(*labelled_mu);
    log->push_back({"tape:" + url, id});
  };
  auto list = std::make_shared<tape::VolumeList>(spares, first_free, opts.ready_wait, blank);
  d.spares = list;
  tape::TapeStorageOptions so;
  so.block_size = opts.block_size;
  so.buffers = opts.buffers;
  so.mode = opts.sync_io ? tape::TapeIoHelper::Mode::sync : tape::TapeIoHelper::Mode::async;
  for (const auto& url : opts.drives) {
    SB_ASSIGN(storage::Location at, storage::Location::parse(url.rfind("tape:", 0) == 0 ? url : "tape:" + url));
    SB_ASSIGN(auto vol, tape::open_volume_for_write(strip(url), opts.block_size, first_free,
                                                    opts.ready_wait, blank));
    d.drives.push_back(tape::make_tape_storage(std::move(vol), list.get(), so));
    d.locations.push_back(std::move(at));
  }
  return d;
#endif
}

Result<std::unique_ptr<storage::ReadFile>> open_media_piece(const catalog::PieceRecord& p,
                                                            uint64_t backup_id,
                                                            const std::vector<std::string>& drives) {
  if (!p.media)
    return fail(Errc::invalid_argument, "piece '" + p.name + "' is not on removable media");
#if !STRIPEBACK_WITH_TAPE
  (void)backup_id;
  (void)drives;
  return left_out("tape", "STRIPEBACK_WITH_TAPE", p.location + "/" + p.name);
#else
  tape::StreamLocation loc;
  loc.block_size = p.media->block_size;
  loc.bytes = p.media->bytes;
  for (const auto& s : p.media->spans)
    loc.spans.push_back({s.volume_id, s.url, s.file, s.block, s.first_seq, s.blocks, s.address});
  std::vector<std::string> stripped;
  for (const auto& d : drives) stripped.push_back(strip(d));
  return tape::open_tape_stream(std::move(loc), {backup_id, p.channel, p.number},
                                p.location + "/" + p.name, std::move(stripped));
#endif
}

bool is_media_drive(const std::string& text) {
  auto at = storage::Location::parse(text);
  return at && at->scheme == "tape";
}

#if STRIPEBACK_WITH_TAPE
namespace {

class TapeScan final : public MediaScan {
 public:
  TapeScan(std::unique_ptr<tape::VolumeScanner> s, std::string location)
      : s_(std::move(s)), location_(std::move(location)) {}
  const std::string& volume_id() const override { return s_->label().volume_id; }
  const std::string& location() const override { return location_; }
  Result<std::optional<MediaSegment>> next() override {
    SB_ASSIGN(auto f, s_->next());
    if (!f) return std::optional<MediaSegment>();
    MediaSegment m;
    m.backup_id = f->id.backup_id;
    m.channel = f->id.channel;
    m.piece = f->id.piece;
    m.segment = f->segment;
    m.block_size = f->block_size;
    m.span = {f->span.volume_id, f->span.url, f->span.file, f->span.block, f->span.first_seq,
              f->span.blocks, f->span.address};
    m.problem = std::move(f->problem);
    return std::optional<MediaSegment>(std::move(m));
  }
  Result<size_t> read(std::byte* buf, size_t len) override {
    return s_->read(reinterpret_cast<uint8_t*>(buf), len);
  }
  Result<uint64_t> finish_segment() override { return s_->finish_segment(); }

 private:
  std::unique_ptr<tape::VolumeScanner> s_;
  std::string location_;
};

}  // namespace
#endif

Result<std::unique_ptr<MediaScan>> scan_media_volume(const std::string& drive) {
#if !STRIPEBACK_WITH_TAPE
  return left_out("tape", "STRIPEBACK_WITH_TAPE", drive);
#else
  SB_ASSIGN(storage::Location at, storage::Location::parse(drive));
  if (at.scheme != "tape")
    return fail(Errc::invalid_argument, "'" + drive + "' is not a drive of removable media");
  SB_ASSIGN(auto s, tape::VolumeScanner::open(strip(drive)));
  return std::unique_ptr<MediaScan>(std::make_unique<TapeScan>(std::move(s), at.str()));
#endif
}

#if STRIPEBACK_TEST_HOOKS
namespace test_hooks {

Result<void> set_faults(std::string_view spec) {
  std::unique_ptr<Wired> w;
  if (!spec.empty()) {
    SB_ASSIGN(auto rules, storage::parse_fault_rules(spec));
    w = std::make_unique<Wired>();
    for (storage::Storage* st : storage::counted_storages()) {
      auto f = std::make_shared<storage::FaultStorage>(
          std::shared_ptr<storage::Storage>(st, [](storage::Storage*) {}));
      for (const auto& r : rules) f->add(r);
      w->faulty[st] = std::move(f);
    }
  }
  std::lock_guard lock(g_wired_mu);
  g_wired = w.get();
  if (w) g_wired_sets.push_back(std::move(w));
  return ok();
}

}  // namespace test_hooks
#endif

}  // namespace stripeback::engine
