// SgTransport: SCSI commands to a real tape drive through Linux SG_IO on its generic SCSI
// device (/dev/sgN, the st driver's /dev/nstN is not used: Stripeback builds its own SSC
// commands and keeps its own position). Needs read-write access to the device node.
#pragma once

#include <memory>
#include <string>

#include "backends/tape/transport.h"

namespace stripeback::tape {

class SgTransport final : public Transport {
 public:
  static Result<std::unique_ptr<SgTransport>> open(const std::string& path);
  ~SgTransport() override;

  Result<ScsiReply> execute(const ScsiCommand& cmd) override;
  const std::string& name() const override { return path_; }
  // What the sg driver accepts per command on most HBAs; larger needs a raised
  // /sys/class/scsi_generic/sgN/device/max_sectors_kb.
  size_t max_transfer() const override { return 4u << 20; }

 private:
  SgTransport() = default;
  std::string path_;
  int fd_ = -1;
};

}  // namespace stripeback::tape
