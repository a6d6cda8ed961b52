#include "storage/path_directory.h"

#include <sys/stat.h>

namespace stripeback::storage {
namespace {

class PathDirectory final : public Directory {
 public:
  PathDirectory(Storage& st, Location at) : st_(st), at_(std::move(at)) {}
  const Location& location() const override { return at_; }

  Result<std::unique_ptr<Directory>> open_dir(const std::string& name, bool create,
                                              mode_t mode) override {
    Location sub = at_.join(name);
    auto info = st_.stat(sub, /*follow=*/false);
    if (info && !S_ISDIR(info->mode))
      return fail(Errc::invalid_argument,
                  "'" + sub.str() + "' is not a directory (a symbolic link or a file)");
    if (!info) {
      if (info.error().code != Errc::not_found || !create) return info.error();
      SB_TRY(st_.make_dirs(sub, mode));
    }
    return make_path_directory(st_, std::move(sub));
  }
  Result<std::unique_ptr<WriteFile>> create(const std::string& name,
                                            const CreateOptions& o) override {
    return st_.create(at_.join(name), o);
  }
  Result<std::unique_ptr<ReadFile>> open(const std::string& name, const OpenOptions& o) override {
    return st_.open_read(at_.join(name), o);
  }
  Result<std::unique_ptr<WriteFile>> open_write(const std::string& name,
                                                const OpenOptions&) override {
    // Only an existing regular file: never one made here, never a link followed.
    SB_ASSIGN(FileInfo info, st_.stat(at_.join(name), /*follow=*/false));
    if (!S_ISREG(info.mode))
      return fail(Errc::invalid_argument, "'" + at_.join(name).str() + "' is not a regular file");
    return st_.open_write(at_.join(name), 0600);
  }
  Result<FileInfo> stat(const std::string& name) override { return st_.stat(at_.join(name), false); }
  Result<std::vector<std::string>> list() override { return st_.list(at_); }
  Result<void> remove(const std::string& name) override { return st_.remove(at_.join(name)); }
  Result<void> rename(const std::string& from, const std::string& to, bool replace) override {
    return st_.rename(at_.join(from), at_.join(to), replace);
  }
  Result<void> set_attrs(const Attrs& a) override { return st_.set_attrs(at_, a); }
  Result<void> sync() override {
    if (!st_.caps().dir_sync) return ok();
    return st_.sync_dir(at_);
  }

 private:
  Storage& st_;
  Location at_;
};

}  // namespace

std::unique_ptr<Directory> make_path_directory(Storage& st, Location at) {
  return std::make_unique<PathDirectory>(st, std::move(at));
}

}  // namespace stripeback::storage
