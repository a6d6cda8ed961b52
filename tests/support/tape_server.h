// The tape test service for tests: a gtest environment that starts scripts/tape-server.sh
// (a private tgtd on 127.0.0.1 with its own control port, portal port and directory, so
// test processes never share one) before the tests and stops it after them.
//
// Tests call TapeServer::urls() and skip with TapeServer::skip_reason() when it is empty.
#pragma once

#include <string>
#include <vector>

namespace stripeback::testing {

struct TapeServerOptions {
  int drives = 3;
  int size_mib = 8;  // nominal tape size: tgt's end of medium warning comes here
};

class TapeServer {
 public:
  // Registers the environment (call once, before RUN_ALL_TESTS, e.g. from a static
  // initializer). The server starts lazily on the first urls() call.
  static void configure(const TapeServerOptions& opts);
  // Starts the service when needed. Empty when it could not start (see skip_reason()).
  static const std::vector<std::string>& urls();
  static const std::string& skip_reason();
  // Stops the service (also done at the end of the test program).
  static void stop();
  // The control port and image directory of the running service, for tests that inspect
  // the tapes (tgtimg --op show) or take a drive offline (tgtadm).
  static int control_port();
  static std::string image(int drive);  // drive from 1
  // Runs tgtadm on the service's control port; returns its exit code.
  static int tgtadm(const std::vector<std::string>& args);
};

}  // namespace stripeback::testing
