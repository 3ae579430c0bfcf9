#include "common/periodic_task.h"

#include <utility>

namespace weft {

PeriodicTask::PeriodicTask(const Clock* clock, absl::Duration period, std::function<void()> task)
    : clock_(clock), period_(period), task_(std::move(task)) {}

PeriodicTask::~PeriodicTask() { Stop(); }

void PeriodicTask::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void PeriodicTask::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void PeriodicTask::Loop() {
  absl::Time next = clock_->Now() + period_;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (clock_->AwaitWithDeadline(&mu_, absl::Condition(&stopping_), next)) return;
    }
    task_();
    next = NextTick(next, clock_->Now(), period_);
  }
}

}  // namespace weft
