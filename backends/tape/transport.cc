#include "backends/tape/transport.h"

#include "backends/tape/iscsi_transport.h"
#include "backends/tape/sg_transport.h"

namespace stripeback::tape {

Result<std::unique_ptr<Transport>> open_transport(const std::string& url) {
  std::string u = url.rfind("tape:", 0) == 0 ? url.substr(5) : url;
  if (u.rfind("iscsi://", 0) == 0) {
    SB_ASSIGN(auto t, IscsiTransport::connect(u));
    return std::unique_ptr<Transport>(std::move(t));
  }
  if (u.rfind("/dev/", 0) == 0) {
    SB_ASSIGN(auto t, SgTransport::open(u));
    return std::unique_ptr<Transport>(std::move(t));
  }
  return fail(Errc::invalid_argument,
              "tape URL '" + url +
                  "' is not supported: use tape:iscsi://HOST:PORT/IQN/LUN or tape:/dev/sgN");
}

}  // namespace stripeback::tape
