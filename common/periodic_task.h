// PeriodicTask: runs a task on its own thread every period of a Clock (a ticker, a
// sweeper), so a FakeClock steps it in tests. Fixed rate: runs missed while the task
// was slow or the clock jumped are skipped, not bunched up. Thread-safe.
#ifndef WEFT_COMMON_PERIODIC_TASK_H_
#define WEFT_COMMON_PERIODIC_TASK_H_

#include <functional>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace weft {

class PeriodicTask {
 public:
  // `clock` outlives this; `period` > 0.
  PeriodicTask(const Clock* clock, absl::Duration period, std::function<void()> task);
  ~PeriodicTask();  // Stop()
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  // Starts the thread: the first run is one period from now. Once only.
  void Start();
  // Ends the wait at once, waits for a run in progress, and joins. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);

  const Clock* const clock_;
  const absl::Duration period_;
  const std::function<void()> task_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace weft

#endif  // WEFT_COMMON_PERIODIC_TASK_H_
