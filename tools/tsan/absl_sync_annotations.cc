// ThreadSanitizer annotations for Debian's (uninstrumented) Abseil synchronization
// primitives. Linked into every cc_binary and cc_test under --config=tsan only
// (.bazelrc: --custom_malloc=//tools/tsan:absl_sync_annotations).
//
// Debian builds libabsl_synchronization.so without -fsanitize=thread, so TSan never
// sees absl::Mutex lock/unlock and reports every access it orders as a data race.
// This file defines the exported member functions of absl::Mutex, absl::CondVar and
// absl::Notification in the executable. The dynamic linker binds every caller to
// these definitions (the executable comes first in the lookup order): Weft's code,
// gRPC's (libgrpc, libgrpc++, libgpr import absl::Mutex/CondVar) and Abseil's own
// calls between them (they go through its PLT). Each definition tells TSan what is
// happening with the __tsan_mutex_* interface, as Abseil's mutex.cc does when it is
// itself built with TSan, and calls the real function, found with dlsym(RTLD_NEXT).
//
// A call made from inside one of the real functions (e.g. Notification's own mutex,
// AwaitWithTimeout calling AwaitWithDeadline) is passed straight through: the outer
// call already told TSan what it does, and TSan ignores memory accesses between
// pre_lock/post_lock and pre_unlock/post_unlock, which includes a Condition
// evaluated inside the real call (false negatives there, never false reports).
//
// The suppressions and default TSAN_OPTIONS compiled into every binary are in
// tools/tsan/suppressions.txt and below (__tsan_default_options).

#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <atomic>

#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

// The only data member of absl::Mutex is std::atomic<intptr_t> mu_ (reading its
// writer bit tells a read hold from a write hold); absl::Notification is
// {Mutex mutex_; std::atomic<bool> notified_yet_;}. Checked here so an Abseil
// upgrade that changes them fails to compile instead of misannotating.
static_assert(sizeof(absl::Mutex) == sizeof(intptr_t), "absl::Mutex layout changed");
static_assert(sizeof(absl::Notification) == 2 * sizeof(intptr_t),
              "absl::Notification layout changed");

namespace {

#define WEFT_STR2(x) #x
#define WEFT_STR(x) WEFT_STR2(x)

constexpr intptr_t kMuWriter = 0x0008;  // absl mutex.cc: held exclusively

// Nesting depth of real Abseil calls on this thread (see the header comment).
thread_local int real_call_depth = 0;

class RealCall {
 public:
  RealCall() { ++real_call_depth; }
  ~RealCall() { --real_call_depth; }
  RealCall(const RealCall&) = delete;
  RealCall& operator=(const RealCall&) = delete;
};

bool Nested() { return real_call_depth > 0; }

// Finds the definition after ours: "_ZN4absl" "<len><inline namespace>" + rest.
void* FindReal(const char* qualifier, const char* rest) {
  static const char kNamespace[] = WEFT_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  char name[256];
  snprintf(name, sizeof(name), "%s4absl%zu%s%s", qualifier, sizeof(kNamespace) - 1,
           kNamespace, rest);
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    fprintf(stderr, "absl_sync_annotations: cannot find %s: %s\n", name, dlerror());
    abort();
  }
  return fn;
}

template <typename Fn>
Fn Real(const char* qualifier, const char* rest) {
  return reinterpret_cast<Fn>(FindReal(qualifier, rest));
}

// The real function, resolved once. `proto` is the function type with `this` first.
#define WEFT_REAL(proto, qualifier, rest) \
  static const auto real = Real<proto>(qualifier, rest)

unsigned HoldFlags(const absl::Mutex* mu) {
  intptr_t v = __atomic_load_n(reinterpret_cast<const intptr_t*>(mu), __ATOMIC_RELAXED);
  return (v & kMuWriter) != 0 ? 0 : __tsan_mutex_read_lock;
}

void* NotifiedAddress(const absl::Notification* n) {
  return const_cast<char*>(reinterpret_cast<const char*>(n)) + sizeof(absl::Mutex);
}

// Lock-like calls: the mutex is held (in `flags` mode) when `call` returns.
template <typename F>
auto Locking(absl::Mutex* mu, unsigned flags, F call) {
  if (Nested()) return call();
  __tsan_mutex_pre_lock(mu, flags);
  RealCall in;
  auto r = call();
  __tsan_mutex_post_lock(mu, flags, 0);
  return r;
}

// Await and CondVar waits: the mutex is released and re-acquired inside `call`.
template <typename F>
auto Waiting(absl::Mutex* mu, F call) {
  if (Nested()) return call();
  unsigned flags = HoldFlags(mu);
  __tsan_mutex_pre_unlock(mu, flags);
  RealCall in;
  auto r = call();
  __tsan_mutex_post_unlock(mu, flags);
  __tsan_mutex_pre_lock(mu, flags);
  __tsan_mutex_post_lock(mu, flags, 0);
  return r;
}

struct Void {};

template <typename F>
Void V(F call) {
  call();
  return Void{};
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

using Cond = const Condition&;

Mutex::~Mutex() {
  WEFT_REAL(void (*)(Mutex*), "_ZN", "5MutexD2Ev");
  if (!Nested()) __tsan_mutex_destroy(this, __tsan_mutex_not_static);
  RealCall in;
  real(this);
}

void Mutex::Lock() {
  WEFT_REAL(void (*)(Mutex*), "_ZN", "5Mutex4LockEv");
  Locking(this, 0, [&] { return V([&] { real(this); }); });
}

void Mutex::ReaderLock() {
  WEFT_REAL(void (*)(Mutex*), "_ZN", "5Mutex10ReaderLockEv");
  Locking(this, __tsan_mutex_read_lock, [&] { return V([&] { real(this); }); });
}

bool Mutex::TryLock() {
  WEFT_REAL(bool (*)(Mutex*), "_ZN", "5Mutex7TryLockEv");
  if (Nested()) return real(this);
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  bool ok;
  {
    RealCall in;
    ok = real(this);
  }
  __tsan_mutex_post_lock(
      this, __tsan_mutex_try_lock | (ok ? 0 : __tsan_mutex_try_lock_failed), 0);
  return ok;
}

bool Mutex::ReaderTryLock() {
  WEFT_REAL(bool (*)(Mutex*), "_ZN", "5Mutex13ReaderTryLockEv");
  if (Nested()) return real(this);
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_read_lock);
  bool ok;
  {
    RealCall in;
    ok = real(this);
  }
  __tsan_mutex_post_lock(
      this, __tsan_mutex_try_read_lock | (ok ? 0 : __tsan_mutex_try_lock_failed), 0);
  return ok;
}

void Mutex::Unlock() {
  WEFT_REAL(void (*)(Mutex*), "_ZN", "5Mutex6UnlockEv");
  if (Nested()) return real(this);
  __tsan_mutex_pre_unlock(this, 0);
  {
    RealCall in;
    real(this);
  }
  __tsan_mutex_post_unlock(this, 0);
}

void Mutex::ReaderUnlock() {
  WEFT_REAL(void (*)(Mutex*), "_ZN", "5Mutex12ReaderUnlockEv");
  if (Nested()) return real(this);
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  {
    RealCall in;
    real(this);
  }
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

void Mutex::LockWhen(Cond cond) {
  WEFT_REAL(void (*)(Mutex*, Cond), "_ZN", "5Mutex8LockWhenERKNS0_9ConditionE");
  Locking(this, 0, [&] { return V([&] { real(this, cond); }); });
}

void Mutex::ReaderLockWhen(Cond cond) {
  WEFT_REAL(void (*)(Mutex*, Cond), "_ZN", "5Mutex14ReaderLockWhenERKNS0_9ConditionE");
  Locking(this, __tsan_mutex_read_lock, [&] { return V([&] { real(this, cond); }); });
}

bool Mutex::LockWhenWithTimeout(Cond cond, Duration timeout) {
  WEFT_REAL(bool (*)(Mutex*, Cond, Duration), "_ZN",
            "5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Locking(this, 0, [&] { return real(this, cond, timeout); });
}

bool Mutex::LockWhenWithDeadline(Cond cond, Time deadline) {
  WEFT_REAL(bool (*)(Mutex*, Cond, Time), "_ZN",
            "5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Locking(this, 0, [&] { return real(this, cond, deadline); });
}

bool Mutex::ReaderLockWhenWithTimeout(Cond cond, Duration timeout) {
  WEFT_REAL(bool (*)(Mutex*, Cond, Duration), "_ZN",
            "5Mutex25ReaderLockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Locking(this, __tsan_mutex_read_lock, [&] { return real(this, cond, timeout); });
}

bool Mutex::ReaderLockWhenWithDeadline(Cond cond, Time deadline) {
  WEFT_REAL(bool (*)(Mutex*, Cond, Time), "_ZN",
            "5Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Locking(this, __tsan_mutex_read_lock,
                 [&] { return real(this, cond, deadline); });
}

void Mutex::Await(Cond cond) {
  WEFT_REAL(void (*)(Mutex*, Cond), "_ZN", "5Mutex5AwaitERKNS0_9ConditionE");
  Waiting(this, [&] { return V([&] { real(this, cond); }); });
}

bool Mutex::AwaitWithTimeout(Cond cond, Duration timeout) {
  WEFT_REAL(bool (*)(Mutex*, Cond, Duration), "_ZN",
            "5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
  return Waiting(this, [&] { return real(this, cond, timeout); });
}

bool Mutex::AwaitWithDeadline(Cond cond, Time deadline) {
  WEFT_REAL(bool (*)(Mutex*, Cond, Time), "_ZN",
            "5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Waiting(this, [&] { return real(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  WEFT_REAL(void (*)(CondVar*, Mutex*), "_ZN", "7CondVar4WaitEPNS0_5MutexE");
  Waiting(mu, [&] { return V([&] { real(this, mu); }); });
}

bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  WEFT_REAL(bool (*)(CondVar*, Mutex*, Duration), "_ZN",
            "7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
  return Waiting(mu, [&] { return real(this, mu, timeout); });
}

bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  WEFT_REAL(bool (*)(CondVar*, Mutex*, Time), "_ZN",
            "7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return Waiting(mu, [&] { return real(this, mu, deadline); });
}

// Signalling is not a synchronization edge of its own (the mutex is); Abseil only
// tells TSan to ignore synchronization inside it.
void CondVar::Signal() {
  WEFT_REAL(void (*)(CondVar*), "_ZN", "7CondVar6SignalEv");
  if (Nested()) return real(this);
  __tsan_mutex_pre_signal(nullptr, 0);
  {
    RealCall in;
    real(this);
  }
  __tsan_mutex_post_signal(nullptr, 0);
}

void CondVar::SignalAll() {
  WEFT_REAL(void (*)(CondVar*), "_ZN", "7CondVar9SignalAllEv");
  if (Nested()) return real(this);
  __tsan_mutex_pre_signal(nullptr, 0);
  {
    RealCall in;
    real(this);
  }
  __tsan_mutex_post_signal(nullptr, 0);
}

// Notification: Notify releases, a wait that saw the notification acquires, on the
// address of notified_yet_, so the inline HasBeenNotified() (an instrumented
// acquire load of that atomic) synchronizes with Notify() too.
void Notification::Notify() {
  WEFT_REAL(void (*)(Notification*), "_ZN", "12Notification6NotifyEv");
  if (Nested()) return real(this);
  __tsan_release(NotifiedAddress(this));
  RealCall in;
  real(this);
}

void Notification::WaitForNotification() const {
  WEFT_REAL(void (*)(const Notification*), "_ZNK",
            "12Notification19WaitForNotificationEv");
  if (Nested()) return real(this);
  {
    RealCall in;
    real(this);
  }
  __tsan_acquire(NotifiedAddress(this));
}

bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  WEFT_REAL(bool (*)(const Notification*, Duration), "_ZNK",
            "12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  if (Nested()) return real(this, timeout);
  bool notified;
  {
    RealCall in;
    notified = real(this, timeout);
  }
  if (notified) __tsan_acquire(NotifiedAddress(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  WEFT_REAL(bool (*)(const Notification*, Time), "_ZNK",
            "12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  if (Nested()) return real(this, deadline);
  bool notified;
  {
    RealCall in;
    notified = real(this, deadline);
  }
  if (notified) __tsan_acquire(NotifiedAddress(this));
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl

// Defaults for every TSan binary; TSAN_OPTIONS in the environment overrides them.
// halt_on_error: the first report fails the test at the racing access.
// second_deadlock_stack: lock-order reports show where both locks were taken.
extern "C" const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1";
}
