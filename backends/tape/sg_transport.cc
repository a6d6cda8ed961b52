#include "backends/tape/sg_transport.h"

#include <fcntl.h>
#include <scsi/sg.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <array>
#include <cerrno>

namespace stripeback::tape {

Result<std::unique_ptr<SgTransport>> SgTransport::open(const std::string& path) {
  std::unique_ptr<SgTransport> t(new SgTransport);
  t->path_ = path;
  t->fd_ = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (t->fd_ < 0) return sys_error(errno, "unable to open tape device '" + path + "'");
  int version = 0;
  if (::ioctl(t->fd_, SG_GET_VERSION_NUM, &version) < 0 || version < 30000)
    return fail(Errc::invalid_argument,
                "'" + path + "' is not a SCSI generic (sg) device; use /dev/sgN");
  // Blocking mode for the commands themselves: O_NONBLOCK only kept open() from waiting.
  const int flags = ::fcntl(t->fd_, F_GETFL);
  if (flags >= 0) ::fcntl(t->fd_, F_SETFL, flags & ~O_NONBLOCK);
  return t;
}

SgTransport::~SgTransport() {
  if (fd_ >= 0) ::close(fd_);
}

Result<ScsiReply> SgTransport::execute(const ScsiCommand& cmd) {
  std::array<uint8_t, 96> sense{};
  sg_io_hdr_t h{};
  h.interface_id = 'S';
  h.cmdp = const_cast<unsigned char*>(cmd.cdb.data());
  h.cmd_len = static_cast<unsigned char>(cmd.cdb.size());
  h.dxfer_direction = cmd.dir == DataDir::read    ? SG_DXFER_FROM_DEV
                      : cmd.dir == DataDir::write ? SG_DXFER_TO_DEV
                                                  : SG_DXFER_NONE;
  h.dxferp = cmd.data.data();
  h.dxfer_len = static_cast<unsigned>(cmd.data.size());
  h.sbp = sense.data();
  h.mx_sb_len = static_cast<unsigned char>(sense.size());
  h.timeout = static_cast<unsigned>(cmd.timeout.count() * 1000);
  if (::ioctl(fd_, SG_IO, &h) < 0)
    return sys_error(errno, "tape '" + path_ + "': " + opcode_name(cmd.cdb[0]) + " failed");
  if (h.host_status != 0)
    return fail(Errc::io, "tape '" + path_ + "': " + opcode_name(cmd.cdb[0]) +
                              " failed: host status " + std::to_string(h.host_status));
  // DRIVER_SENSE (0x08) only says sense bytes are present; anything else is a failure.
  if ((h.driver_status & 0x07) != 0 && h.status == 0)
    return fail(Errc::io, "tape '" + path_ + "': " + opcode_name(cmd.cdb[0]) +
                              " failed: driver status " + std::to_string(h.driver_status));
  ScsiReply r;
  r.status = h.status;
  if (h.sb_len_wr > 0) r.sense.assign(sense.begin(), sense.begin() + h.sb_len_wr);
  if (r.status == kStatusGood && !r.sense.empty()) r.sense.clear();
  const int resid = h.resid > 0 ? h.resid : 0;
  r.transferred = cmd.data.size() - std::min(cmd.data.size(), static_cast<size_t>(resid));
  return r;
}

}  // namespace stripeback::tape
