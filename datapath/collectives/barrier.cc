#include "datapath/collectives/barrier.h"

#include "common/status_macros.h"

namespace weft::datapath::collectives_internal {

absl::Status BarrierDissemination(Context& ctx) {
  for (int distance = 1; distance < ctx.size; distance <<= 1) {
    Requests requests(ctx.transport);
    requests.Recv(Mod(ctx.rank - distance, ctx.size), nullptr, 0);
    requests.Send(Mod(ctx.rank + distance, ctx.size), nullptr, 0);
    RETURN_IF_ERROR(requests.WaitAll());
  }
  return absl::OkStatus();
}

}  // namespace weft::datapath::collectives_internal
