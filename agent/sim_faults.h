// The simulated faults that are not the NIC's: they sit between the agent and its
// controller connection, so the production agent loop never tests for a simulation.
// The composition root (agent/agent_daemon.h) wraps the real client when the simulated
// backend's config asks for one.
//
//   dead   the agent registers and keeps its stream, but its telemetry never reaches
//          the controller (a hung node whose TCP session is still up): the controller
//          must turn it DOWN on silence alone.
//
// Thread-safety: as the wrapped client (the agent calls from its threads as it does).
#ifndef WEFT_AGENT_SIM_FAULTS_H_
#define WEFT_AGENT_SIM_FAULTS_H_

#include <memory>

#include "agent/controller_client.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::agent {

// A client over `inner` (which must outlive it) that behaves as `config`'s simulated
// faults say; nullptr when none of them is a connection fault.
std::unique_ptr<ControllerClient> WrapForSimulatedFaults(const weft::v1::AgentConfig& config,
                                                         ControllerClient* inner);

}  // namespace weft::agent

#endif  // WEFT_AGENT_SIM_FAULTS_H_
