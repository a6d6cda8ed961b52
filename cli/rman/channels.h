// ALLOCATE CHANNEL in a RUN block (docs/rman.md), and the flags a block's channels give the
// commands of its statements: how many (--channels), where a backup writes (a DISK
// channel's FORMAT directory, an SBT channel's tape drive) and the limits RATE,
// MAXPIECESIZE and MAXOPENFILES. Stripeback's channels are alike, so settings that differ
// between channels are refused, saying which.
#pragma once

#include <string>
#include <vector>

#include "cli/rman/cursor.h"

namespace stripeback::cli::rman {

enum class Device { disk, sbt };

struct Channel {
  Location at;
  std::string name;
  Device device = Device::disk;
  std::string place;  // DISK: FORMAT's directory; SBT: the drive's tape: URL; empty: none
  // As written (sizes in upper case); empty: not given.
  std::string rate, max_piece_size, max_open_files;
};

// Reads the rest of "ALLOCATE CHANNEL name DEVICE TYPE DISK|SBT [options]"; the cursor is
// after ALLOCATE.
Result<Channel> read_allocate(Cursor& c);

// The directory part of a DISK FORMAT ('/backup/%U' gives /backup); `at` is the string's.
Result<std::string> format_directory(const std::string& format, Location at);

// What a statement does with the block's channels.
enum class ChannelUse {
  backup,            // BACKUP: count, destination, limits
  source_validation, // BACKUP VALIDATE, VALIDATE DATAFILE: count and read limits
  restore,           // RESTORE: count, or the tape drives to look in
  validate,          // RESTORE ... VALIDATE, VALIDATE BACKUPSET: count
};

// The flags the channels give a statement at `at`. `own_destination`: the BACKUP has a
// FORMAT of its own, which replaces the channels'.
Result<std::vector<std::string>> channel_flags(const std::vector<Channel>& channels,
                                               ChannelUse use, Location at,
                                               bool own_destination);

}  // namespace stripeback::cli::rman
