// A labelled tape volume in a drive, as the writers use it: the open drive, its label, and
// the next free tape file (the engine's own count: tgt cannot report positions).
#pragma once

#include <cstdint>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stripeback/result.h"
#include "backends/tape/drive.h"
#include "backends/tape/label.h"

namespace stripeback::tape {

struct Volume {
  std::string url;
  std::unique_ptr<TapeDrive> drive;
  VolumeLabel label;
  uint32_t next_file = 1;  // tape file the next stream goes to (file 0 is the label)
  bool full = false;       // early warning seen: nothing new starts here
};

// Opens the drive at `url`, waits up to `ready_wait` for it ("waiting for tape"), reads
// the label and checks `block_size` against it and against READ BLOCK LIMITS (errors
// name both numbers). A tape without a label fails with a hint to run `tape label`.
// `first_free` says, from the volume id, where writing starts (the caller knows from its
// catalog what is already on the volume; 1, or no function, for an empty volume). For an
// empty volume the label is rewritten with `block_size`; a volume holding data keeps its
// block size and refuses another one.
using FirstFreeFile = std::function<uint32_t(const std::string& volume_id)>;
// backup --label-blank: a blank tape (LabelRead::blank) is labelled with a generated volume
// id ("SB" and 8 hex digits) at the block size asked for, and `labelled` is told (drive URL,
// volume id). A tape with another format's data or a filemark first is never labelled.
struct BlankLabeling {
  bool enabled = false;
  std::function<void(const std::string& url, const std::string& volume_id)> labelled;
};
Result<std::unique_ptr<Volume>> open_volume_for_write(const std::string& url,
                                                      uint32_t block_size,
                                                      const FirstFreeFile& first_free,
                                                      std::chrono::milliseconds ready_wait,
                                                      const BlankLabeling& blank = {});
// Opens the drive at `url` and reads its label; the label must name `volume_id` (when not
// empty). The drive is left in fixed mode at the label's block size.
Result<std::unique_ptr<Volume>> open_volume_for_read(const std::string& url,
                                                     const std::string& volume_id);

// Where a writer gets its next volume when one is full. Returns not_found ("needs another
// volume") when none is left. Implementations may be shared by several writers (locked).
class VolumeProvider {
 public:
  virtual ~VolumeProvider() = default;
  virtual Result<std::unique_ptr<Volume>> next_volume(uint32_t block_size) = 0;
};

// Hands out the volumes at a fixed list of URLs, each once, in order. Thread-safe.
class VolumeList : public VolumeProvider {
 public:
  VolumeList(std::vector<std::string> urls, FirstFreeFile first_free,
             std::chrono::milliseconds ready_wait, BlankLabeling blank = {});
  Result<std::unique_ptr<Volume>> next_volume(uint32_t block_size) override;

 private:
  std::vector<std::string> urls_;
  FirstFreeFile first_free_;
  std::chrono::milliseconds wait_;
  BlankLabeling blank_;
  size_t next_ = 0;
  std::mutex mu_;
};

}  // namespace stripeback::tape
