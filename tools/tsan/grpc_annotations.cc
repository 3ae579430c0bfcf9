// ThreadSanitizer annotation for Debian's (uninstrumented) gRPC C++ callback API,
// linked with absl_sync_annotations.cc under --config=tsan only.
//
// A server-side callback call (grpc::internal::ServerCallbackCall: the object behind
// a ServerBidiReactor, ServerReadReactor, ... ) counts its outstanding callbacks in
// callbacks_outstanding_ and is torn down (CallOnDone: the reactor's OnDone, then
// the call's own state) after the last decrement, which calls ScheduleOnDone. The
// decrements in gRPC's headers are compiled into Weft's code and TSan sees them; the
// ones inside libgrpc++.so (e.g. after OnCancel) it does not. When the last one is
// in the library, TSan loses the ordering between every earlier callback and the
// teardown, and reports gRPC's own bookkeeping (the call's std::function tags,
// interceptor state) as racing with its destructor. This definition of
// ScheduleOnDone (the library calls it through its PLT, Weft's code directly)
// acquires what every instrumented decrement released before the real one runs:
// exactly what a TSan-built gRPC sees at that point.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>
#include <stdio.h>
#include <stdlib.h>

#include "grpcpp/support/server_callback.h"

namespace grpc {
namespace internal {

void ServerCallbackCall::ScheduleOnDone(bool inline_ondone) {
  static const auto real = reinterpret_cast<void (*)(ServerCallbackCall*, bool)>(
      dlsym(RTLD_NEXT, "_ZN4grpc8internal18ServerCallbackCall14ScheduleOnDoneEb"));
  if (real == nullptr) {
    fprintf(stderr, "grpc_annotations: cannot find ServerCallbackCall::ScheduleOnDone\n");
    abort();
  }
  __tsan_acquire(&callbacks_outstanding_);
  real(this, inline_ondone);
}

}  // namespace internal
}  // namespace grpc
