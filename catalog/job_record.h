// The history of jobs (docs/monitoring.md#job-history): what each backup, restore and
// validation did, kept in the catalog after the job as one JobRecord (record type 7,
// docs/catalog-format.md). Plain data: the engine fills it from a job's summary, the
// catalog stores it, `stripeback report` reads it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stripeback::catalog {

// How long the channel waited for each I/O completion, in three classes (the thresholds are
// part of the format: a record says nothing about them).
inline constexpr int64_t kReadyWaitNs = 1'000'000;    // ready: under 1 ms
inline constexpr int64_t kShortWaitNs = 100'000'000;  // short: under 100 ms; long: the rest

struct WaitCounts {
  uint64_t ready = 0, short_waits = 0, long_waits = 0;
  int64_t total_ns = 0;  // all the waits together
  int64_t max_ns = 0;    // the longest
};

// The I/O of one direction (reads or writes) of a channel or a file.
struct IoFigures {
  uint64_t ios = 0;    // completed requests
  uint64_t bytes = 0;  // bytes they moved
  int64_t busy_ns = 0;  // time some request of this kind was in flight
  WaitCounts waits;
};

struct ChannelIoRecord {
  uint32_t channel = 0;
  std::string io_engine;  // the I/O queues used, "+"-joined: "io_uring", "sync", "nfs", "tape"
  std::string io_mode;    // "async" or "sync"
  uint32_t buffers = 0, buffer_size = 0;
  uint32_t multiplexing = 0;  // files read at once (backup); 1 otherwise
  int64_t elapsed_ns = 0;
  IoFigures read, write;
};

struct FileIoRecord {
  std::string path;
  uint32_t channel = 0;
  IoFigures read, write;
};

// One share of the verdict's evidence: a stage and the part of the channels' time it took.
struct VerdictShare {
  std::string name;  // "read", "write", "cpu", "compress", "wait_read", ...
  double share = 0;  // 0..1, stored in millionths
};

struct JobRecord {
  // Set by the loader: the record's sequence number in the log (the job's id in reports).
  uint64_t sequence = 0;
  std::string type;    // "backup", "restore", "validate", "validate-sources"
  std::string status;  // "complete", "failed", "partial", "cancelled"
  std::string message;  // why it failed or is partial; empty otherwise
  int64_t start_ns = 0, end_ns = 0;  // wall clock, ns since the epoch
  std::string tag;
  std::vector<uint64_t> backup_ids;  // the backup written, or those restored or validated
  uint64_t bytes_in = 0, bytes_out = 0;  // read and written
  uint64_t files = 0;
  uint64_t compress_in = 0, compress_out = 0;  // data frames given to and out of zstd
  std::string bound_by, stage, evidence, suggestion;  // the verdict
  std::vector<VerdictShare> shares;
  std::vector<ChannelIoRecord> channels;
  // At most kMaxFiles files are kept (the ones that moved the most bytes); files_total
  // counts every file the job did I/O on.
  uint64_t files_total = 0;
  std::vector<FileIoRecord> file_io;
  static constexpr size_t kMaxFiles = 1000;
};

}  // namespace stripeback::catalog
