#include "common/stop_signals.h"

#include <pthread.h>

namespace weft {

StopSignals::StopSignals() {
  sigemptyset(&signals_);
  sigaddset(&signals_, SIGTERM);
  sigaddset(&signals_, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
}

int StopSignals::Wait() const {
  int signal_number = 0;
  sigwait(&signals_, &signal_number);
  return signal_number;
}

}  // namespace weft
