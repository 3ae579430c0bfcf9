// LLDP neighbors of the node's NICs, from the lldpd daemon (Debian package lldpd): which
// switch (chassis name) and switch port each netdev is cabled to. The controller uses
// them to infer racks and rails and to check cabling against the declared topology.
//
// LldpcliReader runs `lldpcli [-u SOCKET] -f keyvalue show neighbors` with a timeout
// and parses its output; LldpNicBackend decorates any NicBackend so Discover() fills
// each Nic's lldp_neighbor by netdev. LLDP problems never fail discovery: the NICs are
// reported without neighbors and the reason is logged once per change.
//
// Thread-compatible: one caller at a time (the agent loop).
#ifndef WEFT_AGENT_LLDP_H_
#define WEFT_AGENT_LLDP_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "agent/nic_backend.h"
#include "proto/weft/v1/node.pb.h"

namespace weft::agent {

// Neighbor by local interface name, from `lldpcli -f keyvalue show neighbors` text
// (lines like "lldp.ens1f0np0.chassis.name=leaf-a01"). The port id is port.ifname,
// else port.local, else port.descr, else port.mac. Lines of other forms are ignored;
// INVALID_ARGUMENT when a lldp.* line has no '='.
absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> ParseLldpKeyValue(
    absl::string_view text);

class LldpReader {
 public:
  virtual ~LldpReader() = default;
  virtual absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> Neighbors() = 0;
};

class LldpcliReader : public LldpReader {
 public:
  // `socket_path` empty: lldpd's default control socket.
  explicit LldpcliReader(std::string socket_path, absl::Duration timeout = absl::Seconds(3));
  // UNAVAILABLE when lldpcli is missing, times out or fails (its stderr included).
  absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> Neighbors() override;

 private:
  std::string socket_path_;
  absl::Duration timeout_;
};

class LldpNicBackend : public NicBackend {
 public:
  LldpNicBackend(std::unique_ptr<NicBackend> inner, std::unique_ptr<LldpReader> lldp)
      : inner_(std::move(inner)), lldp_(std::move(lldp)) {}

  absl::StatusOr<NodeInventory> Discover() override;
  absl::StatusOr<std::vector<RawNicReading>> ReadCounters() override {
    return inner_->ReadCounters();
  }
  std::vector<NicTunables*> Tunables() override { return inner_->Tunables(); }

 private:
  std::unique_ptr<NicBackend> inner_;
  std::unique_ptr<LldpReader> lldp_;
  std::string last_problem_;
};

}  // namespace weft::agent

#endif  // WEFT_AGENT_LLDP_H_
