// DesiredStateListener: what the agent stream hands the controller's desired-state
// bookkeeping (controller/rollout/desired_state.h): a stream attached with the version the
// agent has applied, an ACK or NACK, and the tunables status of each telemetry batch.
// AgentServiceImpl calls it on gRPC reactor threads, holding none of its own locks:
// implementations must not block (a short mutex is fine).
#ifndef WEFT_CONTROLLER_ROLLOUT_DESIRED_STATE_LISTENER_H_
#define WEFT_CONTROLLER_ROLLOUT_DESIRED_STATE_LISTENER_H_

#include <cstdint>
#include <string>

#include "proto/weft/v1/desired_state.pb.h"
#include "proto/weft/v1/telemetry.pb.h"

namespace weft::controller {

class DesiredStateListener {
 public:
  virtual ~DesiredStateListener() = default;
  // The node's agent opened a stream (a StreamHello was accepted); it has applied
  // `applied_version` (0: nothing).
  virtual void OnStreamAttached(const std::string& node, uint64_t applied_version) = 0;
  virtual void OnDesiredStateAck(const std::string& node,
                                 const weft::v1::DesiredStateAck& ack) = 0;
  // Called for every accepted telemetry batch that carries a tunables status.
  virtual void OnTunablesStatus(const std::string& node,
                                const weft::v1::TunablesStatus& status) = 0;
};

}  // namespace weft::controller

#endif  // WEFT_CONTROLLER_ROLLOUT_DESIRED_STATE_LISTENER_H_
