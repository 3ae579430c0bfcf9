// MakeNicBackend: the NicBackend an AgentConfig names — "simulated" (agent/sim_backend.h),
// "linux" (agent/linux/linux_backend.h over config.linux().root, with the real
// SIOCETHTOOL reader) or "fabric" (agent/fabric_backend.h: the fabric twin at
// config.fabric().address over a plaintext gRPC channel, since the twin is a loopback
// simulation, not a production peer) — wrapped in an LldpNicBackend (agent/lldp.h) when config.lldp()
// asks for LLDP neighbors: "auto" for the linux backend only, or an explicit lldpd
// socket path for any backend; "off" never. Used by weft-agent and `weft-agent
// inspect`. Thread-safe.
#ifndef WEFT_AGENT_BACKEND_FACTORY_H_
#define WEFT_AGENT_BACKEND_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "agent/nic_backend.h"
#include "common/clock.h"
#include "proto/weft/v1/config.pb.h"

namespace weft::agent {

// `clock` must outlive the backend. INVALID_ARGUMENT for an unknown backend name, a
// simulated config the model refuses, or a fabric backend without fabric.address.
// Connecting to the twin is lazy: an unreachable one fails Discover(), not this.
absl::StatusOr<std::unique_ptr<NicBackend>> MakeNicBackend(const weft::v1::AgentConfig& config,
                                                           const Clock* clock);

}  // namespace weft::agent

#endif  // WEFT_AGENT_BACKEND_FACTORY_H_
