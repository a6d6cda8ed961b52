// IscsiTransport: SCSI commands to a drive behind an iSCSI target, through libiscsi's
// synchronous API. One session (one TCP connection) per transport.
#pragma once

#include <memory>
#include <string>

#include "backends/tape/transport.h"

struct iscsi_context;

namespace stripeback::tape {

class IscsiTransport final : public Transport {
 public:
  // Logs in to `url` (`iscsi://HOST:PORT/IQN/LUN`). Asks for the large data segments and
  // unsolicited data that make tape writes fast; the target may negotiate them down.
  static Result<std::unique_ptr<IscsiTransport>> connect(const std::string& url);
  ~IscsiTransport() override;

  Result<ScsiReply> execute(const ScsiCommand& cmd) override;
  const std::string& name() const override { return url_; }
  size_t max_transfer() const override { return 16u << 20; }

 private:
  IscsiTransport() = default;
  std::string url_;
  iscsi_context* ctx_ = nullptr;
  int lun_ = 0;
};

}  // namespace stripeback::tape
