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
#include "options/settings.h"
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

// Turns an engine error into the status and message of `h`.
sb_status fail_with(Header& h, const Error& e);
sb_status fail_with(Header& h, sb_status s, std::string message);
sb_status status_of(Errc code);

// Settings of a job: its options (through the option schema, options/schema.h, checked as
// they are set) and the embedder's callbacks and storage.
struct Settings {
  options::Settings job;
  sb_progress_fn progress_fn = nullptr;
  void* progress_user = nullptr;
  sb_log_fn log_fn = nullptr;
  void* log_user = nullptr;
  sb_log_level log_min = SB_LOG_WARN;
  std::map<std::string, sb_storage_ops> storages;  // by scheme
};

// Makes messages name options as the C API does ('files_per_set'); called by the entry
// points that make handles, before anything can fail.
void use_api_wording();

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
