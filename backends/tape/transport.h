// Transport: how SCSI commands reach a tape drive. Implementations: IscsiTransport (libiscsi,
// any iSCSI target such as tgtd) and SgTransport (Linux SG_IO on /dev/sgN).
//
// One transport is used by one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "stripeback/result.h"
#include "backends/tape/scsi.h"

namespace stripeback::tape {

class Transport {
 public:
  virtual ~Transport() = default;
  // Sends `cmd` and waits for it. A reply with a CHECK CONDITION status is a value (the
  // caller decodes the sense); only a failure to deliver the command is an Error.
  virtual Result<ScsiReply> execute(const ScsiCommand& cmd) = 0;
  // The device as the user named it, for messages.
  virtual const std::string& name() const = 0;
  // Largest data transfer of one command the transport accepts.
  virtual size_t max_transfer() const = 0;
};

// Opens the transport for a drive URL: `iscsi://HOST:PORT/IQN/LUN` or `/dev/sgN` (an optional
// `tape:` prefix is accepted). Bad URLs are invalid_argument; unreachable drives name the
// URL and the cause.
Result<std::unique_ptr<Transport>> open_transport(const std::string& url);

}  // namespace stripeback::tape
