// ThreadSanitizer annotations for Debian's (uninstrumented) gRPC, linked with
// absl_sync_annotations.cc under --config=tsan only.
//
// gRPC's C++ API is header code that TSan instruments, over libgrpc++ and libgrpc,
// which it does not. The library orders a batch of operations (StartRead, StartWrite,
// Finish, a unary call) before its completion, and a server callback call's last
// callback before its teardown, through completion queues, closures and reference
// counts TSan cannot see; without these edges, everything Weft hands to gRPC (the
// message to read into, the reactor's own state, the call's bookkeeping) looks like
// it races between the thread that started the operation and the one its completion
// runs on. The definitions below sit at the exported functions libgrpc++ and the
// headers call through the PLT, and tell TSan what a TSan-built gRPC would show:
//
//  - grpc_call_start_batch releases on the batch's tag;
//  - the completion acquires on it: for a callback-API tag (CallbackWithSuccessTag or
//    CallbackWithStatusTag, whose completion libgrpc runs by calling the tag's
//    functor_run), by pointing functor_run at a trampoline that acquires and then
//    runs the tag's own StaticRun; for completion-queue tags (the async and sync
//    APIs), when grpc_completion_queue_next/pluck returns the tag;
//  - ServerCallbackCall::ScheduleOnDone (called once the call's callbacks_outstanding_
//    count drops to zero) acquires on that counter: the decrements compiled into
//    Weft's code release on it, the ones inside libgrpc++ do not.
#include <dlfcn.h>
#include <grpc/grpc.h>
#include <sanitizer/tsan_interface.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "grpcpp/support/server_callback.h"

namespace {

void* FindReal(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    fprintf(stderr, "grpc_annotations: cannot find %s: %s\n", name, dlerror());
    abort();
  }
  return fn;
}

using FunctorRun = void (*)(grpc_completion_queue_functor*, int);

// The StaticRun of each callback-API tag type, as first seen (every copy of the
// inline function is the same code), and the trampoline that replaces it.
struct TagKind {
  const char* symbol;
  std::atomic<FunctorRun> original{nullptr};
};
TagKind kSuccessTag{"_ZN4grpc8internal22CallbackWithSuccessTag9StaticRunEP29grpc_completion_queue_functori"};
TagKind kStatusTag{"_ZN4grpc8internal21CallbackWithStatusTag9StaticRunEP29grpc_completion_queue_functori"};

void RunSuccessTag(grpc_completion_queue_functor* functor, int ok) {
  __tsan_acquire(functor);
  kSuccessTag.original.load(std::memory_order_acquire)(functor, ok);
}

void RunStatusTag(grpc_completion_queue_functor* functor, int ok) {
  __tsan_acquire(functor);
  kStatusTag.original.load(std::memory_order_acquire)(functor, ok);
}

bool IsSymbol(void* address, const char* symbol) {
  Dl_info info;
  return dladdr(address, &info) != 0 && info.dli_sname != nullptr &&
         info.dli_saddr == address && strcmp(info.dli_sname, symbol) == 0;
}

// The first words of the tags seen so far (a StaticRun, or the vtable pointer of a
// completion-queue tag) and what they are, so dladdr runs once per distinct value.
enum class Kind { kOther, kSuccessTag, kStatusTag };
struct Seen {
  std::atomic<uintptr_t> word{0};
  std::atomic<Kind> kind{Kind::kOther};
};
constexpr int kSeenSlots = 128;
Seen seen[kSeenSlots];
std::mutex seen_mu;  // writers only

Kind Classify(FunctorRun run) {
  const auto word = reinterpret_cast<uintptr_t>(run);
  for (Seen& slot : seen) {
    uintptr_t w = slot.word.load(std::memory_order_acquire);
    if (w == word) return slot.kind.load(std::memory_order_relaxed);
    if (w == 0) break;
  }
  Kind kind = IsSymbol(reinterpret_cast<void*>(run), kSuccessTag.symbol) ? Kind::kSuccessTag
              : IsSymbol(reinterpret_cast<void*>(run), kStatusTag.symbol)
                  ? Kind::kStatusTag
                  : Kind::kOther;
  std::lock_guard<std::mutex> lock(seen_mu);
  for (Seen& slot : seen) {
    uintptr_t w = slot.word.load(std::memory_order_relaxed);
    if (w == word) break;
    if (w == 0) {
      slot.kind.store(kind, std::memory_order_relaxed);
      slot.word.store(word, std::memory_order_release);
      break;
    }
  }
  return kind;
}

// If `tag` is a callback-API tag (its first word, functor_run, is one of the
// StaticRun functions), routes its completion through the trampoline, which runs the
// first StaticRun seen of that type (every copy of the inline function is the same
// code). Any other tag grpc++ passes here is a C++ object whose first word is a
// vtable pointer.
void TrampolineCallbackTag(void* tag) {
  auto* functor = static_cast<grpc_completion_queue_functor*>(tag);
  FunctorRun run = functor->functor_run;
  if (run == &RunSuccessTag || run == &RunStatusTag) return;
  switch (Classify(run)) {
    case Kind::kSuccessTag: {
      FunctorRun expected = nullptr;
      kSuccessTag.original.compare_exchange_strong(expected, run);
      functor->functor_run = &RunSuccessTag;
      return;
    }
    case Kind::kStatusTag: {
      FunctorRun expected = nullptr;
      kStatusTag.original.compare_exchange_strong(expected, run);
      functor->functor_run = &RunStatusTag;
      return;
    }
    case Kind::kOther:
      return;
  }
}

void AcquireCompletion(const grpc_event& event) {
  if (event.type == GRPC_OP_COMPLETE) __tsan_acquire(event.tag);
}

}  // namespace

extern "C" grpc_call_error grpc_call_start_batch(grpc_call* call, const grpc_op* ops,
                                                  size_t nops, void* tag, void* reserved) {
  static const auto real =
      reinterpret_cast<grpc_call_error (*)(grpc_call*, const grpc_op*, size_t, void*, void*)>(
          FindReal("grpc_call_start_batch"));
  if (tag != nullptr) {
    TrampolineCallbackTag(tag);
    __tsan_release(tag);
  }
  return real(call, ops, nops, tag, reserved);
}

extern "C" grpc_event grpc_completion_queue_next(grpc_completion_queue* cq,
                                                 gpr_timespec deadline, void* reserved) {
  static const auto real =
      reinterpret_cast<grpc_event (*)(grpc_completion_queue*, gpr_timespec, void*)>(
          FindReal("grpc_completion_queue_next"));
  grpc_event event = real(cq, deadline, reserved);
  AcquireCompletion(event);
  return event;
}

extern "C" grpc_event grpc_completion_queue_pluck(grpc_completion_queue* cq, void* tag,
                                                  gpr_timespec deadline, void* reserved) {
  static const auto real =
      reinterpret_cast<grpc_event (*)(grpc_completion_queue*, void*, gpr_timespec, void*)>(
          FindReal("grpc_completion_queue_pluck"));
  grpc_event event = real(cq, tag, deadline, reserved);
  AcquireCompletion(event);
  return event;
}

namespace grpc {
namespace internal {

void ServerCallbackCall::ScheduleOnDone(bool inline_ondone) {
  static const auto real = reinterpret_cast<void (*)(ServerCallbackCall*, bool)>(
      FindReal("_ZN4grpc8internal18ServerCallbackCall14ScheduleOnDoneEb"));
  __tsan_acquire(&callbacks_outstanding_);
  real(this, inline_ondone);
}

}  // namespace internal
}  // namespace grpc
