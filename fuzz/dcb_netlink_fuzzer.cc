// Fuzzes the parsers of the kernel's DCB netlink replies (agent/tunables/dcb_netlink.h):
// ParseIeeeGetReply and ParseIeeeSetReply on the same bytes, as read from the rtnetlink
// socket for a request with sequence number kSeq. The kernel (or a driver) answering
// with short, overlong or badly nested attributes must get a status, never a read past
// the reply.
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "agent/tunables/dcb_netlink.h"
#include "fuzz/fuzz_check.h"

namespace {
// The sequence number of the seeds in corpus/dcb_netlink_fuzzer (fuzz/make_seeds.py).
constexpr uint32_t kSeq = 7;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view reply(reinterpret_cast<const char*>(data), size);

  const absl::StatusOr<weft::agent::DcbIeeeState> state =
      weft::agent::ParseIeeeGetReply(reply, kSeq);
  if (state.ok()) {
    for (const dcb_app& app : state->apps) {
      // Each entry came whole out of the reply.
      FUZZ_CHECK(sizeof(app) <= size);
    }
  } else {
    FUZZ_CHECK(!state.status().message().empty()) << state.status().code();
  }

  const absl::Status set = weft::agent::ParseIeeeSetReply(reply, kSeq);
  if (!set.ok()) FUZZ_CHECK(!set.message().empty()) << set.code();
  // Whatever a GET reply is refused for (its header), a SET reply is refused for too.
  if (!state.ok() && state.status().code() != absl::StatusCode::kInternal) {
    FUZZ_CHECK(!set.ok()) << state.status();
  }
  return 0;
}
