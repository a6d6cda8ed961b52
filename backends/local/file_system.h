// Which kind of file system a local directory is on, so that a walk can leave alone the
// pseudo file systems of the kernel (/proc, /sys, /dev, ...): their "files" are views of
// kernel state with sizes that mean nothing, and reading some of them has side effects.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

namespace stripeback::io {

// The name of the pseudo file system `dir` is on (proc, sysfs, devtmpfs, cgroup, cgroup2,
// tracefs, debugfs, securityfs, pstore, bpf, configfs, fusectl, mqueue, hugetlbfs, devpts,
// autofs, binfmt_misc), told by statfs(2) f_type; nullopt for a file system that holds
// files (ext4, xfs, tmpfs, NFS, ...) or one that cannot be examined. devtmpfs reports
// tmpfs's f_type, so a tmpfs is looked up by `dev` (the directory's st_dev) in
// /proc/self/mountinfo.
std::optional<std::string> pseudo_file_system(const std::string& dir, dev_t dev);

}  // namespace stripeback::io
