// Invariants of the catalog model (catalog/model.h) that hold whatever records it was
// fed: checked by the catalog fuzz targets after applying decoded frames.
#pragma once

#include <set>
#include <string>

#include "catalog/model.h"
#include "tests/fuzz/fuzz_check.h"

namespace stripeback::fuzz {

inline void check_model(const catalog::Model& m, size_t frames_applied) {
  static const std::set<std::string> kStatus = {"incomplete", "failed", "partial", "complete",
                                                "damaged"};
  FUZZ_CHECK(m.warnings().size() <= frames_applied);
  uint64_t prev = 0;
  for (const catalog::Backup& b : m.snapshot()) {
    FUZZ_CHECK(b.id != 0 && b.id > prev);
    prev = b.id;
    // A new backup must get an id no record has used.
    FUZZ_CHECK(m.next_id() > b.id);
    FUZZ_CHECK(kStatus.count(b.status_name()) == 1);
    if (b.usable()) FUZZ_CHECK(b.ended && b.pieces.size() >= b.end.pieces);
    std::set<std::string> names;
    for (const auto& p : b.pieces) FUZZ_CHECK(names.insert(p.name).second);
    FUZZ_CHECK(m.has_piece(b.id, "") == (names.count("") == 1));
  }
}

}  // namespace stripeback::fuzz
