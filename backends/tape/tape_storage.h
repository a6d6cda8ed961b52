// TapeStorage: one tape drive as a Storage (sequential only, removable media). Each file
// created on it is one tape stream (one tape file; more when it spans volumes): writes may
// be submitted in any order but reach the drive in file order (the file holds the ones that
// come early), through the drive's TapeIoHelper so the drive streams while the producer
// fills the next buffers. Only one stream is written at a time: bytes of a file created
// while the previous one is still open wait in memory until it is committed.
//
// Its counter group "tape" is the drive's (tape/io_helper.h DriveStats).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "storage/storage.h"
#include "backends/tape/io_helper.h"
#include "backends/tape/stream.h"
#include "backends/tape/volume.h"

namespace stripeback::tape {

struct TapeStorageOptions {
  uint32_t block_size = 256 * 1024;
  size_t buffers = 8;
  TapeIoHelper::Mode mode = TapeIoHelper::Mode::async;
};

// `volume` is the drive's loaded, labelled volume, positioned for writing; `spares` (may
// be null) gives the next volumes at end of medium. Used by one thread (a channel).
std::unique_ptr<storage::Storage> make_tape_storage(std::unique_ptr<Volume> volume,
                                                    VolumeProvider* spares,
                                                    const TapeStorageOptions& o);

// A stream written earlier, opened for reading in order (caps: sequential): a thread reads
// it from its volumes (read_stream: straight to each span's tape file) up to 64 MiB ahead
// of the reader. Reads must come at non-decreasing offsets; bytes skipped over are dropped.
// Each volume is looked for in the drive recorded for its span or, when `drives` is not
// empty, in whichever of them holds it (by its label). `name` is for messages.
Result<std::unique_ptr<storage::ReadFile>> open_tape_stream(StreamLocation loc, StreamId id,
                                                           std::string name,
                                                           std::vector<std::string> drives);

}  // namespace stripeback::tape
