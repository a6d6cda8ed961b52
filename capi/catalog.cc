// sb_catalog: open a catalog directory, list its backups (the JSON of `list --json`).
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>

#include "capi/handles.h"
#include "cli/render.h"
#include "engine/wiring/backends.h"

namespace stripeback::capi {
namespace {

sb_status open_into(sb_catalog& c, const char* dir, unsigned flags) {
  if (dir == nullptr || *dir == '\0')
    return fail_with(c.h, SB_INVALID_ARGUMENT, "catalog directory is null or empty");
  if ((flags & ~static_cast<unsigned>(SB_CATALOG_CREATE)) != 0)
    return fail_with(c.h, SB_INVALID_ARGUMENT,
                     "unknown catalog flags " + std::to_string(flags));
  auto st = engine::storage_for(storage::Location::local(dir));
  if (!st) return fail_with(c.h, st.error());
  auto cat = catalog::Catalog::open(
      dir, (flags & SB_CATALOG_CREATE) ? catalog::Create::yes : catalog::Create::no, **st);
  if (!cat) {
    Error e = cat.error();
    return fail_with(c.h, status_of(e.code), "catalog is not usable: " + e.what);
  }
  c.cat = std::move(*cat);
  c.h.error.clear();
  return SB_OK;
}

}  // namespace
}  // namespace stripeback::capi

using stripeback::capi::fail_with;
using stripeback::capi::Kind;

extern "C" {

sb_status sb_catalog_open(const char* dir, unsigned flags, sb_catalog** out) {
  stripeback::capi::use_api_wording();
  if (out == nullptr) return SB_INVALID_ARGUMENT;
  *out = nullptr;
  sb_catalog* c = nullptr;
  try {
    c = new sb_catalog();
  } catch (...) {
    return SB_NOMEM;
  }
  *out = c;
  try {
    return stripeback::capi::open_into(*c, dir, flags);
  } catch (const std::bad_alloc&) {
    c->h.error = "out of memory";
    return SB_NOMEM;
  } catch (const std::exception& e) {
    c->h.error = std::string("internal error: ") + e.what();
    return SB_ERROR;
  } catch (...) {
    c->h.error = "internal error";
    return SB_ERROR;
  }
}

void sb_catalog_free(sb_catalog* cat) {
  if (cat != nullptr && cat->h.kind == Kind::catalog) delete cat;
}

sb_status sb_catalog_list(sb_catalog* cat, const char** json) {
  if (cat == nullptr || cat->h.kind != Kind::catalog) return SB_INVALID_ARGUMENT;
  if (json == nullptr) return fail_with(cat->h, SB_INVALID_ARGUMENT, "json out pointer is null");
  *json = nullptr;
  if (!cat->cat) return fail_with(cat->h, SB_INVALID_ARGUMENT, "catalog is not open");
  try {
    if (auto r = cat->cat->refresh(); !r) return fail_with(cat->h, r.error());
    cat->list_json = stripeback::cli::list_json(*cat->cat);
    cat->listed = cat->cat->backups();
    cat->listed_totals.clear();
    cat->listed_status.clear();
    // The status names are computed: kept beside the records they describe.
    for (const auto& b : cat->listed) {
      auto t = stripeback::cli::backup_totals(b);
      cat->listed_totals.emplace_back(t.files, t.bytes);
      cat->listed_status.push_back(b.status_name());
    }
    cat->h.error.clear();
    *json = cat->list_json.c_str();
    return SB_OK;
  } catch (const std::bad_alloc&) {
    cat->h.error = "out of memory";
    return SB_NOMEM;
  } catch (const std::exception& e) {
    cat->h.error = std::string("internal error: ") + e.what();
    return SB_ERROR;
  }
}

size_t sb_catalog_backup_count(const sb_catalog* cat) {
  if (cat == nullptr || cat->h.kind != Kind::catalog) return 0;
  return cat->listed.size();
}

sb_status sb_catalog_backup_at(const sb_catalog* cat, size_t index, sb_backup_info* out) {
  if (cat == nullptr || cat->h.kind != Kind::catalog) return SB_INVALID_ARGUMENT;
  // Every catalog handle is made writable by sb_catalog_open; the const of this accessor
  // promises only that the listing is left as it is, not the message of its last failure.
  auto& h = const_cast<sb_catalog*>(cat)->h;
  if (out == nullptr) return fail_with(h, SB_INVALID_ARGUMENT, "backup info out pointer is null");
  // The first version of the struct ends with `destination`: a caller built against it (or
  // a later one) gets every member that fits in the size it gives, and no byte beyond.
  constexpr size_t first_size = offsetof(sb_backup_info, destination) + sizeof(const char*);
  if (out->size < first_size)
    return fail_with(h, SB_INVALID_ARGUMENT,
                     "backup info size " + std::to_string(out->size) + " is below " +
                         std::to_string(first_size) + ": set 'size' to sizeof(sb_backup_info)");
  if (index >= cat->listed.size())
    return fail_with(h, SB_NOT_FOUND,
                     "no backup at index " + std::to_string(index) + " of the " +
                         std::to_string(cat->listed.size()) + " listed");
  const auto& b = cat->listed[index];
  sb_backup_info info{};
  info.size = out->size;
  info.id = b.id;
  info.tag = b.begin.tag.c_str();
  info.status = cat->listed_status[index].c_str();
  info.files = cat->listed_totals[index].first;
  info.bytes = cat->listed_totals[index].second;
  info.start_time_ns = b.begin.start_time_ns;
  info.destination = b.begin.destination.c_str();
  std::memcpy(out, &info, std::min<size_t>(out->size, sizeof info));
  h.error.clear();
  return SB_OK;
}

}  // extern "C"
