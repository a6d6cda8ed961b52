// The nfs-ganesha test server for the NFS tests: started once per test binary (a gtest
// Environment) through scripts/nfs-server.sh and stopped at the end. When it cannot start
// (not root, packages missing) the tests skip with the script's reason.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace stripeback::it {

class NfsServer : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;
  static NfsServer& get();
  bool up() const { return !url_.empty(); }
  const std::string& skip_reason() const { return reason_; }
  // nfs://127.0.0.1/<export>?nfsport=N&mountport=M
  const std::string& url() const { return url_; }
  // The export's directory on this machine (read it; change it only through NFS).
  const std::string& export_dir() const { return export_dir_; }
  // URL of `rel` below the export (rel without a leading '/'), query kept at the end.
  std::string url_of(const std::string& rel) const;
  std::string query() const;
  // SIGKILL the server, then start it again on the same export.
  bool restart();
  // SIGSTOP / SIGCONT the server.
  void pause();
  void resume();
  int pid() const;

 private:
  std::string script(const std::string& arg, int* rc) const;
  std::string state_, url_, export_dir_, reason_;
};

}  // namespace stripeback::it

#define SB_REQUIRE_NFS()                                                              \
  do {                                                                                \
    if (!::stripeback::it::NfsServer::get().up())                                     \
      GTEST_SKIP() << "NFS test server unavailable: "                                 \
                   << ::stripeback::it::NfsServer::get().skip_reason();               \
  } while (0)
