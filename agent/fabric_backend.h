// FabricNicBackend: the NicBackend of a node of the fabric twin (weft-fabric,
// proto/weft/v1/fabric.proto). Discover() and ReadCounters() call ReadNode for this
// node; the twin answers with each NIC's inventory, its counters by their real host
// names (ports/1/counters, hw_counters, ethtool -S) and its current QoS and DCQCN
// tunables. Counters become RawNicCounters through agent/host_counters.h, the mapping
// the Linux backend uses on sysfs and ethtool, so both give the same units
// (port_*_data × 4), the same raw 32-bit Q-counters and the same missing_counters.
//
// Tunables: one FabricNicTunables per RoCE NIC of the last Discover(). It keeps the NIC's
// state in a SimNicTunables started from the twin's reading (the twin's values, checked
// on write with the simulated NIC's rules: canonical parameters, firmware ranges) and,
// after each write it accepts, pushes the NIC's complete state (NodeQos + DcqcnParams)
// with SetNicTunables. A push the twin refuses or cannot take fails the write, and the
// local state goes back to what the twin last took, so Read() always says what the
// twin has; the applier (agent/tunables/applier.h) then restores the parameters it
// wrote. Each ReadCounters() refreshes the state from the twin's reading, so the
// applier's drift check sees what the twin has, not only what this agent wrote.
// Caveat of the wire format: an empty rp_/np_enabled_priorities list is pushed
// as an empty repeated field ("none" on the NIC).
//
// Errors: an unreachable twin is UNAVAILABLE naming the address and what to do; a node
// the twin does not have is NOT_FOUND naming the node. The rack and pod the controller
// sees come from the agent's config, not from the twin; Discover() notes a mismatch.
//
// The stub is injected: production passes FabricService::NewStub over a plaintext
// channel (the twin is a loopback simulation; see agent/backend_factory.h), tests a
// stub to an in-process server. Thread-compatible: the agent loop is the only caller.
#ifndef WEFT_AGENT_FABRIC_BACKEND_H_
#define WEFT_AGENT_FABRIC_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/nic_backend.h"
#include "agent/tunables/nic_tunables.h"
#include "agent/tunables/sim_nic_tunables.h"
#include "common/clock.h"
#include "proto/weft/v1/fabric.grpc.pb.h"

namespace weft::agent {

struct FabricBackendOptions {
  std::string address;  // weft-fabric's host:port, for messages
  std::string node;     // this agent's node_name, as the twin names it
  // The rack and pod of the agent's config: compared with the twin's, never replaced.
  std::string rack;
  std::string pod;
  absl::Duration rpc_timeout = absl::Seconds(5);
  // IPv4 addresses (host byte order) that replace the twin's in the IPv4-mapped GIDs of
  // the twin's NICs, NIC i the i-th (FabricBackendConfig.nic_ipv4): pingmesh probes
  // them for real. NICs past the list keep the twin's address.
  std::vector<uint32_t> nic_ipv4;
};

// One twin NIC's QoS and DCQCN tunables. `fabric` must outlive it.
class FabricNicTunables : public NicTunables {
 public:
  FabricNicTunables(weft::v1::FabricService::StubInterface* fabric,
                    const FabricBackendOptions* options,
                    const weft::v1::NicTunablesReading& reading);

  const std::string& device() const override { return model_->device(); }
  std::vector<std::string> Parameters() const override { return model_->Parameters(); }
  absl::StatusOr<std::string> Read(absl::string_view parameter) override;
  // Checks and sets `value` locally, then pushes the NIC's complete state to the twin.
  // A refused value is not pushed; a failed push returns the twin's error and leaves
  // the NIC as the twin has it.
  absl::Status Write(absl::string_view parameter, absl::string_view value) override;
  // Takes the twin's current state (a later ReadNode), so a change made behind the
  // agent's back reads as drift.
  void Refresh(const weft::v1::NicTunablesReading& reading);

 private:
  absl::Status Push(const weft::v1::NodeQos& qos, const weft::v1::DcqcnParams& dcqcn);

  weft::v1::FabricService::StubInterface* fabric_;
  const FabricBackendOptions* options_;
  std::unique_ptr<SimNicTunables> model_;
  // What the twin last took (or reported): the state a failed push goes back to.
  weft::v1::NodeQos twin_qos_;
  weft::v1::DcqcnParams twin_dcqcn_;
};

class FabricNicBackend : public NicBackend {
 public:
  // `clock` must outlive the backend.
  FabricNicBackend(FabricBackendOptions options,
                   std::unique_ptr<weft::v1::FabricService::StubInterface> fabric,
                   const Clock* clock);

  absl::StatusOr<NodeInventory> Discover() override;
  absl::StatusOr<std::vector<RawNicReading>> ReadCounters() override;
  std::vector<NicTunables*> Tunables() override;

 private:
  absl::StatusOr<weft::v1::ReadNodeResponse> ReadNode();
  std::vector<std::string> NodeNotes(const weft::v1::ReadNodeResponse& node) const;
  FabricNicTunables* TunablesOf(const std::string& device);

  FabricBackendOptions options_;
  std::unique_ptr<weft::v1::FabricService::StubInterface> fabric_;
  const Clock* clock_;
  std::vector<std::string> devices_;  // from the last Discover(), in its order
  std::vector<std::unique_ptr<FabricNicTunables>> tunables_;
  bool discovered_ = false;
};

// One twin NIC's reading: its counters by host name mapped as the Linux backend maps
// sysfs and ethtool (agent/host_counters.h); expected names that are absent are listed
// in missing_counters (sorted), "hw_counters/" when the twin gives none.
RawNicReading ReadingFromFabricNic(const weft::v1::FabricNic& nic, absl::Time timestamp);

}  // namespace weft::agent

#endif  // WEFT_AGENT_FABRIC_BACKEND_H_
