#include "backends/local/file_system.h"

#include <linux/magic.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <cstdint>
#include <fstream>
#include <sstream>

namespace stripeback::io {
namespace {

// Not in every <linux/magic.h>: the values of the kernel's own definitions.
constexpr int64_t kConfigfsMagic = 0x62656570;
constexpr int64_t kFusectlMagic = 0x65735543;
constexpr int64_t kMqueueMagic = 0x19800202;

struct PseudoKind {
  int64_t magic;
  const char* name;
};

constexpr PseudoKind kPseudo[] = {
    {PROC_SUPER_MAGIC, "proc"},        {SYSFS_MAGIC, "sysfs"},
    {CGROUP_SUPER_MAGIC, "cgroup"},    {CGROUP2_SUPER_MAGIC, "cgroup2"},
    {TRACEFS_MAGIC, "tracefs"},        {DEBUGFS_MAGIC, "debugfs"},
    {SECURITYFS_MAGIC, "securityfs"},  {PSTOREFS_MAGIC, "pstore"},
    {BPF_FS_MAGIC, "bpf"},             {kConfigfsMagic, "configfs"},
    {kFusectlMagic, "fusectl"},        {kMqueueMagic, "mqueue"},
    {HUGETLBFS_MAGIC, "hugetlbfs"},    {DEVPTS_SUPER_MAGIC, "devpts"},
    {AUTOFS_SUPER_MAGIC, "autofs"},    {BINFMTFS_MAGIC, "binfmt_misc"},
};

// The file system type mountinfo gives for the mount of device `dev`, empty if none.
std::string mounted_type(dev_t dev) {
  std::ifstream in("/proc/self/mountinfo");
  const std::string want = std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
  for (std::string line; std::getline(in, line);) {
    // id parent major:minor root mount-point options [optional...] - type source options
    std::istringstream fields(line);
    std::string id, parent, devno;
    if (!(fields >> id >> parent >> devno) || devno != want) continue;
    size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    std::string type;
    tail >> type;
    return type;
  }
  return "";
}

}  // namespace

std::optional<std::string> pseudo_file_system(const std::string& dir, dev_t dev) {
  struct statfs sfs {};
  if (::statfs(dir.c_str(), &sfs) != 0) return std::nullopt;
  const auto magic = static_cast<int64_t>(sfs.f_type);
  for (const auto& k : kPseudo)
    if (k.magic == magic) return std::string(k.name);
  if (magic == TMPFS_MAGIC && mounted_type(dev) == "devtmpfs") return std::string("devtmpfs");
  return std::nullopt;
}

}  // namespace stripeback::io
