// The one place that wires location schemes to storage backends (backends.cc): local
// files, NFS, and drives of removable media (tape). The rest of engine/ reaches every
// medium through storage::Storage and branches on its StorageCaps, never on which backend
// it is; a check in the test suite (tests/engine/seam_check.sh) keeps it that way.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "storage/storage.h"
#include "stripeback/result.h"

namespace stripeback::engine {

// A part left out of this build (STRIPEBACK_WITH_NFS=OFF, ...) asked for: invalid_argument
// with sys_errno ENOTSUP, "this build has no NFS support (STRIPEBACK_WITH_NFS=OFF): URL".
Error left_out(const char* what, const char* option, const std::string& asked);

// Registers the backends built into this library (storage/registry.h) in the process's
// built-in registry. Runs before main() in a program that links this file; a program that
// parses locations without calling into the engine calls it first. Idempotent.
void register_builtin_backends();

// Lets the NFS client raise glibc's malloc thresholds for the process when it makes its
// first connection (NfsOptions::tune_malloc): the CLI always does; an embedder asks with
// the option nfs_tune_malloc. Whether it is allowed: nfs_malloc_tuning(). A build without
// NFS has nothing to tune.
void allow_nfs_malloc_tuning();
bool nfs_malloc_tuning();

// The S3 settings a front end was given (the option schema's s3_* keys); empty or unset:
// not given (the environment and the AWS shared files decide, backends/s3/config.h).
struct S3Options {
  std::string endpoint, region, profile, url_style, ca_file, checksum;
  // What objects are written with: x-amz-storage-class, x-amz-server-side-encryption
  // ("AES256" or "aws:kms") and, with aws:kms, the key's id.
  std::string storage_class, sse, sse_kms_key_id;
  std::optional<uint64_t> part_size;
  std::optional<uint32_t> parts_in_flight;
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<uint32_t> attempts;
};
// Makes them the process's S3 settings for the jobs that follow (resolved on first use of
// an s3:// location, whose error says what is missing). A build without S3 ignores them.
void configure_s3(const S3Options& o);

// The storage that serves `at` (local files or NFS). A drive of removable media is not
// found by location: it is opened with open_media_destination.
Result<storage::Storage*> storage_for(const storage::Location& at);

// A location as text, parsed, with its storage.
struct Place {
  storage::Storage* storage = nullptr;
  storage::Location at;
};
Result<Place> place_of(const std::string& text);

// The calling thread's counter groups of every backend it used, those of `also` (a
// channel's own drive) included (at the end of a channel, on its thread; drops the
// thread's connections).
std::vector<storage::CounterGroup> thread_counters(const std::vector<storage::Storage*>& also);

inline constexpr uint32_t kDefaultMediaBlockSize = 256 * 1024;

// Drives of removable media as a backup destination.
// A block size of removable media as given ("256K"): from 1 byte to 16 MiB - 1.
Result<uint32_t> parse_media_block_size(std::string_view text);

struct MediaOptions {
  std::vector<std::string> drives;   // tape:iscsi://... or tape:/dev/sgN, one channel each
  std::vector<std::string> volumes;  // spare volumes (drive URLs) taken at end of medium
  uint32_t block_size = kDefaultMediaBlockSize;
  size_t buffers = 8;                // the drive's I/O helper ring
  bool sync_io = false;              // write on the channel's thread (for comparison)
  std::chrono::milliseconds ready_wait{std::chrono::seconds(10)};
  // A blank volume is labelled with a generated id instead of being refused.
  bool label_blank = false;
};

// A volume a backup labelled itself (MediaOptions::label_blank).
struct LabelledVolume {
  std::string drive;
  std::string volume_id;
};

struct MediaDestination {
  std::shared_ptr<void> spares;  // the spare volumes, shared by the drives
  std::vector<std::unique_ptr<storage::Storage>> drives;  // drives[c] for channel c + 1
  std::vector<storage::Location> locations;               // where each drive is
  // Volumes labelled so far (spare volumes taken later add to it); read after the writers end.
  std::shared_ptr<std::vector<LabelledVolume>> labelled;
};

// Opens every drive, waits for it to be ready, checks the block size against its limits
// and its label, and starts its I/O helper. Each volume's free space starts after the last
// piece the catalog records on it (a tape cannot say). Fails before anything is written:
// invalid_argument for a bad block size or an unlabelled volume (the message names both
// numbers or the fix), busy for a drive that stays not ready.
Result<MediaDestination> open_media_destination(const MediaOptions& opts,
                                                const catalog::Catalog& cat);

// Opens piece `p` of backup `backup_id` on removable media for reading in order, straight
// from its tape files (a piece that spans volumes is read across them). Each volume is
// looked for in the drive recorded for it or, when `drives` is not empty, in whichever of
// those holds it (by its label). The file reads ahead on its own thread.
Result<std::unique_ptr<storage::ReadFile>> open_media_piece(const catalog::PieceRecord& p,
                                                            uint64_t backup_id,
                                                            const std::vector<std::string>& drives);

// Whether `text` names a drive of removable media (tape:...) rather than a place with files.
bool is_media_drive(const std::string& text);

// One tape file of a volume as a scan from the volume's start finds it (catalog rebuild).
struct MediaSegment {
  uint64_t backup_id = 0;
  uint32_t channel = 0, piece = 0;
  uint32_t segment = 0;           // 0: the piece starts here; more: it continues here
  uint32_t block_size = 0;
  catalog::MediaSpan span;        // `blocks` once the segment has been read to its end
  std::string problem;            // a tape file that is not a segment of a piece: why
};

// A volume of removable media read in order from its first piece to the end of its data.
class MediaScan {
 public:
  virtual ~MediaScan() = default;
  virtual const std::string& volume_id() const = 0;
  // The drive as a location, as the pieces found on it are recorded ("tape:...").
  virtual const std::string& location() const = 0;
  // The rest of the current tape file is read over, then the next segment is found;
  // nothing at the end of the recorded data.
  virtual Result<std::optional<MediaSegment>> next() = 0;
  // The current segment's bytes in order; fewer than `len` only at its end.
  virtual Result<size_t> read(std::byte* buf, size_t len) = 0;
  // Reads over the rest of the current segment; its data blocks.
  virtual Result<uint64_t> finish_segment() = 0;
};

// Opens the drive, waits for it, reads its label and stands before its first piece.
Result<std::unique_ptr<MediaScan>> scan_media_volume(const std::string& drive);

}  // namespace stripeback::engine

#if STRIPEBACK_TEST_HOOKS
namespace stripeback::engine::test_hooks {

// Runs the program under storage faults: from now on storage_for() hands out the local and
// NFS storages wrapped in one storage::FaultStorage (a pair shared by every job) with the
// rules `spec` gives, in parse_fault_rules' grammar (storage/fault_storage.h); an empty
// spec removes the wrapping. A spec that does not parse fails with invalid_argument naming
// the rule and what is wrong, and changes nothing. Storages handed out before keep their
// rules. Any thread; meant for a program's start-up.
Result<void> set_faults(std::string_view spec);

}  // namespace stripeback::engine::test_hooks
#endif
