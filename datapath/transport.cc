#include "datapath/transport.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace weft::datapath {

absl::Status Transport::WaitAll(absl::Span<const RequestId> ids) {
  absl::Status first;
  for (RequestId id : ids) {
    absl::Status status = Wait(id);
    if (first.ok() && !status.ok()) first = status;
  }
  return first;
}

absl::Status Transport::CheckPeer(int peer) const {
  if (peer < 0 || peer >= size() || peer == rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", rank(), ": peer ", peer, " is not another rank of ", size()));
  }
  return absl::OkStatus();
}

absl::Status Transport::Send(int peer, const void* data, size_t num_bytes) {
  ASSIGN_OR_RETURN(RequestId id, PostSend(peer, data, num_bytes));
  return Wait(id);
}

absl::Status Transport::Recv(int peer, void* data, size_t num_bytes) {
  ASSIGN_OR_RETURN(RequestId id, PostRecv(peer, data, num_bytes));
  return Wait(id);
}

}  // namespace weft::datapath
