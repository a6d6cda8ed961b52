// `stripeback bench nfs`: the same files read (and written) through the kernel's file
// path and through the user-space NFS client, side by side.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cli/nfs_flags.h"

namespace stripeback::cli {

struct NfsBenchFlags {
  std::string kernel_path, nfs_url, size = "1G";
  unsigned channels = 2;
  bool write = false, json = false;
};

// Adds `bench nfs` under `bench`; returns the `nfs` subcommand.
CLI::App* add_nfs_bench(CLI::App* bench, NfsBenchFlags& f, NfsFlags& nfs);
int run_nfs_bench_cmd(const NfsBenchFlags& f);

}  // namespace stripeback::cli
