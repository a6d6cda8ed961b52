// The C API's handles (include/stripeback/stripeback.h): what each opaque type holds. Every
// handle starts with a Header, so sb_errmsg (and the typed sb_*_errmsg) can take any of them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/catalog.h"
#include "engine/transform/crypto.h"
#include "stripeback/result.h"
#include "stripeback/stripeback.h"

namespace stripeback::capi {

enum class Kind : uint32_t {
  options = 0x5342'4f50,  // "SBOP"
  catalog = 0x5342'4341,  // "SBCA"
  job = 0x5342'4a42,      // "SBJB"
};

struct Header {
  explicit Header(Kind k) : kind(k) {}
  Kind kind;
  std::string error;  // the last failure's message, "" after success
};

// Turns an engine error into the status and message of `h`, in the embedder's words
// (option_wording).
sb_status fail_with(Header& h, const Error& e);
// An engine message as the C API says it: the CLI's flags it names ("--max-piece-size",
// "use --force") become the option keys that set them ("'max_piece_size'", "set 'force'").
std::string option_wording(std::string message);
// A key sb_options_set knows ("channels", "max_piece_size", ...).
bool is_option_key(std::string_view name);
sb_status fail_with(Header& h, sb_status s, std::string message);
sb_status status_of(Errc code);

// Settings of a job, checked as they are set.
struct Settings {
  std::vector<std::string> sources, paths;
  std::string destination, target, tag;
  std::optional<uint64_t> backup_id;
  uint32_t channels = 2;
  std::string compress = "none";
  uint32_t files_per_set = 64, max_open_files = 8;
  uint64_t max_piece_size = 0, section_size = 0, rate = 0, job_rate = 0;
  std::optional<size_t> buffers, buffer_size;  // unset: the buffer rule chooses
  std::optional<std::chrono::seconds> duration;
  bool partial = false;
  bool one_file_system = false, skip_unreadable = false;
  std::optional<int> level;
  bool cumulative = false, optimize = false, force = false, delta = false, encrypt = false;
  engine::KeySource keys;
  bool direct = true;
  std::optional<double> sample;
  std::optional<uint64_t> seed;
  uint32_t progress_interval_ms = 250;
  bool status_file = true;  // <catalog>/jobs/<host>.<pid>[-n].status while the job runs
  bool nfs_tune_malloc = false;
  sb_progress_fn progress_fn = nullptr;
  void* progress_user = nullptr;
  sb_log_fn log_fn = nullptr;
  void* log_user = nullptr;
  sb_log_level log_min = SB_LOG_WARN;
  std::map<std::string, sb_storage_ops> storages;  // by scheme
};

}  // namespace stripeback::capi

struct sb_options {
  stripeback::capi::Header h{stripeback::capi::Kind::options};
  stripeback::capi::Settings s;
};

struct sb_catalog {
  stripeback::capi::Header h{stripeback::capi::Kind::catalog};
  std::unique_ptr<stripeback::catalog::Catalog> cat;
  std::string list_json;
  std::vector<stripeback::catalog::Backup> listed;  // what list_json shows
  std::vector<std::pair<uint64_t, uint64_t>> listed_totals;  // files, bytes
  std::vector<std::string> listed_status;  // Backup::status_name() of each
};

struct sb_job;  // capi/job.cc
