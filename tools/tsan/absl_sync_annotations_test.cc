// Under --config=tsan: TSan sees the ordering that Debian's absl::Mutex, CondVar and
// Notification provide (//tools/tsan:absl_sync_annotations, linked into every binary
// by --custom_malloc), so correctly locked code is not reported; and it still
// reports a real race (the test runs its own DISABLED_ cases in a child process and
// reads the report). In every other build these tests are skipped.
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/base/config.h"
#include "absl/base/options.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace {

#ifdef ABSL_HAVE_THREAD_SANITIZER
constexpr bool kTsan = true;
#else
constexpr bool kTsan = false;
#endif

#define SKIP_UNLESS_TSAN() \
  if (!kTsan) GTEST_SKIP() << "only meaningful under --config=tsan"

constexpr int kIterations = 2000;

// Runs `body` on two threads at once.
template <typename F>
void TwoThreads(F body) {
  std::thread a(body, 0);
  std::thread b(body, 1);
  a.join();
  b.join();
}

#define WEFT_STR2(x) #x
#define WEFT_STR(x) WEFT_STR2(x)

TEST(AbslSyncAnnotations, ExecutableDefinesTheMutexFunctions) {
  SKIP_UNLESS_TSAN();
  // What libabsl_synchronization, libgrpc and libgpr bind absl::Mutex::Lock to.
  std::string ns = WEFT_STR(ABSL_OPTION_INLINE_NAMESPACE_NAME);
  std::string name = "_ZN4absl" + std::to_string(ns.size()) + ns + "5Mutex4LockEv";
  void* lock = dlsym(RTLD_DEFAULT, name.c_str());
  ASSERT_NE(lock, nullptr) << name;
  Dl_info info;
  ASSERT_NE(dladdr(lock, &info), 0);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  char resolved[PATH_MAX];
  ASSERT_NE(realpath(info.dli_fname, resolved), nullptr) << info.dli_fname;
  EXPECT_EQ(std::string(resolved), std::string(exe));
}

TEST(AbslSyncAnnotations, MutexOrdersACounter) {
  SKIP_UNLESS_TSAN();
  absl::Mutex mu;
  int counter = 0;
  TwoThreads([&](int) {
    for (int i = 0; i < kIterations; ++i) {
      absl::MutexLock lock(&mu);
      ++counter;
    }
  });
  EXPECT_EQ(counter, 2 * kIterations);
}

TEST(AbslSyncAnnotations, TryLockAndReaderLock) {
  SKIP_UNLESS_TSAN();
  absl::Mutex mu;
  int value = 0;
  long sum = 0;  // touched by the reader thread only
  TwoThreads([&](int id) {
    for (int i = 0; i < kIterations; ++i) {
      if (id == 0) {
        while (!mu.TryLock()) {
        }
        ++value;
        mu.Unlock();
      } else if (mu.ReaderTryLock()) {
        sum += value;
        mu.ReaderUnlock();
      } else {
        absl::ReaderMutexLock lock(&mu);
        sum += value;
      }
    }
  });
  EXPECT_EQ(value, kIterations);
  EXPECT_GE(sum, 0);
}

TEST(AbslSyncAnnotations, CondVarHandsOffData) {
  SKIP_UNLESS_TSAN();
  absl::Mutex mu;
  absl::CondVar cv;
  bool ready = false;
  int data[4] = {0, 0, 0, 0};  // written before `ready`, read after, outside the lock
  std::thread producer([&] {
    for (int& d : data) d = 7;
    absl::MutexLock lock(&mu);
    ready = true;
    cv.Signal();
  });
  {
    absl::MutexLock lock(&mu);
    while (!ready) cv.WaitWithTimeout(&mu, absl::Seconds(10));
  }
  EXPECT_EQ(data[0] + data[3], 14);
  producer.join();
}

TEST(AbslSyncAnnotations, AwaitAndLockWhenHandOffData) {
  SKIP_UNLESS_TSAN();
  absl::Mutex mu;
  int stage = 0;
  int payload[2] = {0, 0};  // plain ints: std::string's code is in uninstrumented libstdc++
  std::thread other([&] {
    mu.LockWhen(absl::Condition(
        +[](int* s) { return *s == 1; }, &stage));
    payload[1] = payload[0] + 1;
    stage = 2;
    mu.Unlock();
  });
  {
    absl::MutexLock lock(&mu);
    payload[0] = 41;
    stage = 1;
    mu.Await(absl::Condition(+[](int* s) { return *s == 2; }, &stage));
  }
  other.join();
  EXPECT_EQ(payload[1], 42);
}

TEST(AbslSyncAnnotations, NotificationHandsOffData) {
  SKIP_UNLESS_TSAN();
  int a = 0, b = 0;
  absl::Notification wrote_a, wrote_b;
  std::thread other([&] {
    a = 1;
    wrote_a.Notify();
    b = 2;
    wrote_b.Notify();
  });
  wrote_a.WaitForNotification();
  EXPECT_EQ(a, 1);
  // HasBeenNotified() is inline (an acquire load of the flag): it synchronizes too.
  while (!wrote_b.HasBeenNotified()) {
  }
  EXPECT_EQ(b, 2);
  other.join();
}

// Racy on purpose: run only in the child process below.
TEST(AbslSyncAnnotations, DISABLED_UnlockedCounter) {
  int counter = 0;
  TwoThreads([&](int) {
    for (int i = 0; i < kIterations; ++i) ++counter;
  });
  printf("counter %d\n", counter);
}

// Racy on purpose: each thread holds a different mutex.
TEST(AbslSyncAnnotations, DISABLED_CounterUnderTwoMutexes) {
  absl::Mutex mu[2];
  int counter = 0;
  TwoThreads([&](int id) {
    for (int i = 0; i < kIterations; ++i) {
      absl::MutexLock lock(&mu[id]);
      ++counter;
    }
  });
  printf("counter %d\n", counter);
}

// Runs this binary's test `name` (a DISABLED_ one) and returns its output.
std::string RunChild(const std::string& name) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "readlink failed";
  exe[n] = '\0';
  // Not Bazel's test protocol: the child must not write this test's XML or
  // premature-exit file, nor shard.
  std::string cmd =
      "env -u XML_OUTPUT_FILE -u GTEST_OUTPUT -u TEST_PREMATURE_EXIT_FILE "
      "-u TEST_SHARD_INDEX -u TEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX "
      "-u GTEST_TOTAL_SHARDS TSAN_OPTIONS=halt_on_error=1 '" +
      std::string(exe) +
      "' --gtest_also_run_disabled_tests --gtest_filter=AbslSyncAnnotations." + name +
      " 2>&1";
  FILE* child = popen(cmd.c_str(), "r");
  if (child == nullptr) return "popen failed";
  std::string out;
  char buf[4096];
  size_t got;
  while ((got = fread(buf, 1, sizeof(buf), child)) > 0) out.append(buf, got);
  pclose(child);
  return out;
}

TEST(AbslSyncAnnotations, UnlockedCounterIsReported) {
  SKIP_UNLESS_TSAN();
  std::string out = RunChild("DISABLED_UnlockedCounter");
  EXPECT_NE(out.find("WARNING: ThreadSanitizer: data race"), std::string::npos) << out;
}

TEST(AbslSyncAnnotations, CounterUnderTwoMutexesIsReported) {
  SKIP_UNLESS_TSAN();
  std::string out = RunChild("DISABLED_CounterUnderTwoMutexes");
  EXPECT_NE(out.find("WARNING: ThreadSanitizer: data race"), std::string::npos) << out;
  // The report lists the mutex each access held: TSan knows them as mutexes.
  EXPECT_NE(out.find("Mutex M"), std::string::npos) << out;
}

}  // namespace
