// Page validators (backup --check-logical, docs/page-checks.md): look inside each block a
// backup reads and say which pages are corrupt.
//
// A validator knows one database's block format. It decides which files hold its pages
// (checks()), their page size, and whether one page is valid (check()): an empty string,
// or the reason it is not. It is stateless once made, so every channel may call it at
// once. The first is PostgreSQL's; another format is added by implementing the interface
// and naming it in make_validator().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "stripeback/result.h"

namespace stripeback::engine {

class PageValidator {
 public:
  virtual ~PageValidator() = default;
  virtual const char* name() const = 0;  // "postgres"
  virtual uint32_t page_size() const = 0;
  // For a file (as the backup names it) that holds pages to check: the block number its
  // first page has (a relation's segment files go on numbering); nullopt for any other file.
  // Asked once per file, not per page.
  virtual std::optional<uint64_t> first_block(const std::string& path) const = 0;
  // Page `block` (page_size() bytes at `page`): empty when valid, else why not
  // ("checksum mismatch: stored 0x1a2b, computed 0x3c4d", "bad header: ...").
  virtual std::string check_block(uint64_t block, const std::byte* page) const = 0;

  bool checks(const std::string& path) const { return first_block(path).has_value(); }
  // The page at byte `offset` of `path`, a file checks() accepts.
  std::string check(const std::string& path, uint64_t offset, const std::byte* page) const {
    return check_block(first_block(path).value_or(0) + offset / page_size(), page);
  }
  // A page that failed check_block() on every read, `why` being the reason it gave: the
  // reason to report it, or empty when it is newer, not corrupt: a running database is
  // rewriting it, and the redo every restore of a hot backup replays will replace it.
  virtual std::string judge_failed(const std::byte* page, std::string why) const = 0;
};

// --- PostgreSQL ---

// The cluster's state as pg_control records it (PostgreSQL's DBState, by value).
enum class PgState : uint32_t {
  starting = 0,
  shut_down = 1,
  shut_down_in_recovery = 2,
  shutting_down = 3,
  in_crash_recovery = 4,
  in_archive_recovery = 5,
  in_production = 6,
};

// What a validator needs from a cluster's global/pg_control.
struct PgControl {
  uint32_t page_size = 0;          // BLCKSZ
  uint32_t segment_pages = 0;      // RELSEG_SIZE: pages per segment file (name.1, name.2, ...)
  uint32_t checksum_version = 0;   // 0: no data checksums
  uint64_t checkpoint_lsn = 0;     // the latest checkpoint when it was read
  PgState state = PgState::in_production;
  // Set for a backup that knows where the redo replayed over its copy begins (backup --pg:
  // the start LSN pg_backup_start returned): the bound judge_failed_page() uses instead of
  // checkpoint_lsn for a running cluster.
  std::optional<uint64_t> redo_from;
};
// Reads and checks (its CRC-32C) `<data_dir>/global/pg_control`.
Result<PgControl> read_pg_control(const std::string& data_dir);

// The judgement of PageValidator::judge_failed() for a PostgreSQL page whose pd_lsn is
// `lsn`, by the cluster's control file `c` as read when the backup began
// (docs/page-checks.md, "Stopped and running clusters").
std::string judge_failed_page(const PgControl& c, uint64_t lsn, std::string why);

// PostgreSQL's page checksum (the FNV-1a based algorithm of its storage/checksum_impl.h,
// as documented there): of a page of `page_size` bytes that is block `block` of its
// relation fork, with its pd_checksum field taken as zero.
uint16_t pg_page_checksum(const std::byte* page, uint32_t page_size, uint64_t block);

// The validator of the cluster whose data directory is `data_dir` (page size from
// pg_control unless `page_size` is given).
Result<std::unique_ptr<PageValidator>> postgres_validator(const std::string& data_dir,
                                                          std::optional<uint32_t> page_size = {});


// --check-logical[=FORMAT]: FORMAT "postgres", or "auto" (a source that is a PostgreSQL data
// directory, or lies in one). Errors name the format or say no source is one.
// `changing_from`: where the database's redo begins for this backup (backup --pg: its start
// LSN), a sharper bound than the latest checkpoint for pages being written (see
// judge_failed_page).
Result<std::unique_ptr<PageValidator>> make_validator(const std::string& format,
                                                      const std::vector<std::string>& sources,
                                                      std::optional<uint32_t> page_size = {},
                                                      std::optional<uint64_t> changing_from = {});

}  // namespace stripeback::engine
