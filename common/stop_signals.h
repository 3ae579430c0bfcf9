// SIGTERM and SIGINT, taken by the daemon's main thread. Construct StopSignals in main
// before any thread starts: the signals are then blocked in every thread (threads
// inherit the mask), so no handler ever runs on a gRPC or civetweb thread, and Wait()
// receives them with sigwait().
//
// Not thread-safe: one instance, in main.
#ifndef WEFT_COMMON_STOP_SIGNALS_H_
#define WEFT_COMMON_STOP_SIGNALS_H_

#include <signal.h>

namespace weft {

class StopSignals {
 public:
  StopSignals();  // blocks SIGTERM and SIGINT in the calling thread

  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Blocks until SIGTERM or SIGINT arrives; returns its number.
  int Wait() const;

 private:
  sigset_t signals_;
};

}  // namespace weft

#endif  // WEFT_COMMON_STOP_SIGNALS_H_
