#include "engine/tape_backup.h"

#include <fcntl.h>
#include <unistd.h>

#include <map>

#include "io/file.h"

namespace stripeback::engine {
namespace {

std::string strip(const std::string& url) {
  return url.rfind("tape:", 0) == 0 ? url.substr(5) : url;
}

}  // namespace

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

Result<TapeDestination> open_tape_destination(const TapeOptions& opts,
                                              const catalog::Catalog& cat) {
  if (opts.drives.empty()) return fail(Errc::invalid_argument, "no tape drive given");
  TapeDestination d;
  auto first_free = first_free_files(cat);
  std::vector<std::string> spares;
  for (const auto& v : opts.volumes) spares.push_back(strip(v));
  d.spares = std::make_unique<tape::VolumeList>(spares, first_free, opts.ready_wait);
  for (const auto& url : opts.drives) {
    SB_ASSIGN(auto vol, tape::open_volume_for_write(strip(url), opts.block_size, first_free,
                                                    opts.ready_wait));
    d.sinks.push_back(std::make_unique<TapeChannelSink>(
        std::move(vol), d.spares.get(), opts.block_size, opts.buffers,
        opts.sync_io ? tape::TapeIoHelper::Mode::sync : tape::TapeIoHelper::Mode::async));
  }
  return d;
}

Result<uint64_t> stage_tape_piece(const catalog::PieceRecord& p, uint64_t backup_id,
                                  const std::string& path,
                                  const std::vector<std::string>& drives) {
  if (!p.media) return fail(Errc::invalid_argument, "piece '" + p.name + "' is not on tape");
  tape::StreamLocation loc;
  loc.block_size = p.media->block_size;
  loc.bytes = p.media->bytes;
  for (const auto& s : p.media->spans)
    loc.spans.push_back({s.volume_id, s.url, s.file, s.block, s.first_seq, s.blocks, s.address});
  io::UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd.valid()) return sys_error(errno, "unable to create '" + path + "'");
  std::vector<std::unique_ptr<tape::Volume>> open;
  uint64_t read = 0;
  tape::VolumeOpener opener = [&](const tape::Span& sp) -> Result<tape::Volume*> {
    for (auto& v : open)
      if (v->label.volume_id == sp.volume_id) return v.get();
    if (drives.empty()) {
      SB_ASSIGN(auto v, tape::open_volume_for_read(sp.url, sp.volume_id));
      open.push_back(std::move(v));
      return open.back().get();
    }
    std::string tried;
    for (const auto& d : drives) {
      auto v = tape::open_volume_for_read(strip(d), sp.volume_id);
      if (v) {
        open.push_back(std::move(*v));
        return open.back().get();
      }
      tried += "; " + v.error().what;
    }
    return fail(Errc::not_found, "volume " + sp.volume_id + " is in none of the drives given" + tried);
  };
  auto r = tape::read_stream(loc, {backup_id, p.channel, p.number}, opener,
                             [&](std::span<const uint8_t> b) -> Result<void> {
                               size_t done = 0;
                               while (done < b.size()) {
                                 ssize_t n = ::write(fd.get(), b.data() + done, b.size() - done);
                                 if (n < 0) {
                                   if (errno == EINTR) continue;
                                   return sys_error(errno, "unable to write '" + path + "'");
                                 }
                                 done += static_cast<size_t>(n);
                               }
                               read += b.size();
                               return ok();
                             });
  if (!r) {
    ::unlink(path.c_str());
    return r.error().wrap("unable to read piece '" + p.name + "' from tape");
  }
  return read;
}

}  // namespace stripeback::engine
