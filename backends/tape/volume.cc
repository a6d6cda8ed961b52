#include "backends/tape/volume.h"
#include "util/log.h"

#include <chrono>
#include <cstdio>
#include <random>


namespace stripeback::tape {

Result<std::unique_ptr<Volume>> open_volume_for_write(const std::string& url,
                                                      uint32_t block_size,
                                                      const FirstFreeFile& first_free,
                                                      std::chrono::milliseconds ready_wait,
                                                      const BlankLabeling& blank) {
  auto v = std::make_unique<Volume>();
  v->url = url;
  SB_ASSIGN(v->drive, TapeDrive::open(url));
  SB_TRY(v->drive->wait_ready(ready_wait, [](const std::string& msg) { util::log_warn(msg); }));
  SB_ASSIGN(BlockLimits limits, v->drive->read_block_limits());
  SB_TRY(check_block_size(block_size, limits, url));
  SB_ASSIGN(LabelRead lr, read_label(*v->drive));
  if (!lr.label && blank.enabled && lr.blank) {
    VolumeLabel l;
    std::random_device rd;
    char id[16];
    std::snprintf(id, sizeof id, "SB%08X", static_cast<unsigned>(rd()));
    l.volume_id = id;
    l.block_size = block_size;
    l.created_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    SB_TRY(write_label(*v->drive, l));
    if (blank.labelled) blank.labelled(url, l.volume_id);
    lr.label = l;
  }
  if (!lr.label)
    return fail(Errc::invalid_argument,
                "tape '" + url + "': " + lr.why_none +
                    "; label it first: stripeback tape label --volume ID " + url +
                    (lr.blank ? " (or give backup --label-blank)" : ""));
  v->label = *lr.label;
  const uint32_t first_free_file = first_free ? first_free(v->label.volume_id) : 1;
  if (first_free_file <= 1) {
    if (v->label.block_size != block_size) {
      v->label.block_size = block_size;
      SB_TRY(write_label(*v->drive, v->label));
    }
  } else if (v->label.block_size != block_size) {
    return fail(Errc::invalid_argument,
                "tape '" + url + "' (volume " + v->label.volume_id + ") holds data written with block size " +
                    std::to_string(v->label.block_size) + ", not " + std::to_string(block_size) +
                    "; use --tape-block-size " + std::to_string(v->label.block_size) +
                    " or relabel the volume");
  }
  SB_TRY(v->drive->set_block_size(block_size));
  v->next_file = std::max<uint32_t>(first_free_file, 1);
  return v;
}

Result<std::unique_ptr<Volume>> open_volume_for_read(const std::string& url,
                                                     const std::string& volume_id) {
  auto v = std::make_unique<Volume>();
  v->url = url;
  SB_ASSIGN(v->drive, TapeDrive::open(url));
  SB_TRY(v->drive->wait_ready(std::chrono::seconds(10),
                              [](const std::string& msg) { util::log_warn(msg); }));
  SB_ASSIGN(LabelRead lr, read_label(*v->drive));
  if (!lr.label) return fail(Errc::not_found, "tape '" + url + "': " + lr.why_none);
  if (!volume_id.empty() && lr.label->volume_id != volume_id)
    return fail(Errc::not_found, "tape '" + url + "' holds volume " + lr.label->volume_id +
                                     ", expected volume " + volume_id);
  v->label = *lr.label;
  SB_TRY(v->drive->set_block_size(v->label.block_size));
  return v;
}

VolumeList::VolumeList(std::vector<std::string> urls, FirstFreeFile first_free,
                       std::chrono::milliseconds ready_wait, BlankLabeling blank)
    : urls_(std::move(urls)),
      first_free_(std::move(first_free)),
      wait_(ready_wait),
      blank_(std::move(blank)) {}

Result<std::unique_ptr<Volume>> VolumeList::next_volume(uint32_t block_size) {
  std::string url;
  {
    std::lock_guard lock(mu_);
    if (next_ >= urls_.size())
      return fail(Errc::not_found,
                  "needs another volume: every tape volume given is full (add one with "
                  "--tape-volumes)");
    url = urls_[next_++];
  }
  return open_volume_for_write(url, block_size, first_free_, wait_, blank_);
}

}  // namespace stripeback::tape
