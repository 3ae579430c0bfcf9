// ControllerEpochFence: which controller the agent obeys when several may speak to it
// (replicas on etcd, issue 23). Every ControllerMessage carries its sender's leader
// epoch (its election key's create revision; 0 from a single controller without etcd).
// The agent keeps the highest epoch it has seen and ignores any message with a lower
// one, so an old leader that was paused and wakes up after a new one took over changes
// nothing on the node. Kept for the life of the agent process: after a restart the
// agent registers anew, and a deposed leader cannot commit that registration.
//
// Thread-safe (one atomic).
#ifndef WEFT_AGENT_CONTROLLER_EPOCH_H_
#define WEFT_AGENT_CONTROLLER_EPOCH_H_

#include <atomic>
#include <cstdint>

namespace weft::agent {

class ControllerEpochFence {
 public:
  // True when `epoch` is at least the highest seen (which it then becomes); false
  // when a newer leader has spoken already: ignore the message.
  bool Admit(uint64_t epoch) {
    uint64_t seen = highest_.load(std::memory_order_relaxed);
    while (epoch > seen) {
      if (highest_.compare_exchange_weak(seen, epoch, std::memory_order_relaxed)) return true;
    }
    return epoch == seen;
  }

  uint64_t highest() const { return highest_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> highest_{0};
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_CONTROLLER_EPOCH_H_
