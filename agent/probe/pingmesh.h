// Pingmesh: the agent's prober and responder as one part (issue 22), built by the
// composition root (agent/agent_daemon.h) from AgentConfig.probe and used by the
// agent loop (agent/agent.h): it answers other nodes' probes on probe.udp_port
// (UdpResponder), probes the pinglist the controller sends (Prober over UdpProber),
// and hands out the windows as they close (the agent sends them up at once), with the
// traceroutes of its UDP flows (PathTracer through the same UdpProber: each flow's own
// 5-tuple) when probe.traces_per_second is set.
//
// Over RDMA UD (where the composition root passes a Verbs, i.e. on real NICs): Start
// opens one UdProbeTransport per ACTIVE RoCE NIC with a RoCE v2 IPv4 GID; its QP
// number is advertised as Nic.probe_ud_qpn. A NIC where that fails is logged and
// probed over UDP only.
//
// The node's probe rate is the lower of probe.max_probes_per_second and what
// probe.max_nic_share of the slowest NIC's line rate carries (kWireBytesPerProbe per
// probe with both replies), fixed at Start() from the discovered NICs.
//
// Thread-safety: thread-safe; Start() once, after Create, before the rest.
#ifndef WEFT_AGENT_PROBE_PINGMESH_H_
#define WEFT_AGENT_PROBE_PINGMESH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "agent/probe/path_tracer.h"
#include "agent/probe/prober.h"
#include "agent/probe/ud_transport.h"
#include "agent/probe/udp_transport.h"
#include "common/clock.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "proto/weft/v1/config.pb.h"
#include "proto/weft/v1/node.pb.h"
#include "proto/weft/v1/probe.pb.h"

namespace weft::agent::probe {

// Bytes one UDP probe exchange puts on the wire: the probe, ACK1 and ACK2, each a
// 64-byte payload + UDP 8 + IPv4 20 + Ethernet 14 + FCS 4 + preamble and gap 20.
inline constexpr double kWireBytesPerProbe = 3 * (kUdpProbeBytes + 8 + 20 + 14 + 4 + 20);

// The node cap: `max_probes_per_second`, or fewer when `max_nic_share` of the slowest
// NIC with a known speed (Nic.speed_mbps) carries fewer probe exchanges.
double ProbeRateCap(double max_probes_per_second, double max_nic_share,
                    const std::vector<weft::v1::Nic>& nics);

class Pingmesh {
 public:
  // Null when config.probe.udp_port is 0 (probing off). A responder port that cannot be
  // bound (another agent on the host holds it) is not fatal: the error log names the
  // port and the setting to change, weft_agent_pingmesh_responder_up{node,port} is 0,
  // udp_port() is 0, so the controller leaves the node out of the pingmesh.
  // UNAVAILABLE when the prober's sockets cannot be set up at all.
  // `verbs` (may be null: no UD) is kept for the UD transports.
  static absl::StatusOr<std::unique_ptr<Pingmesh>> Create(
      const weft::v1::AgentConfig& config, const Clock* clock, prometheus::Registry* registry,
      std::unique_ptr<rdma::Verbs> verbs = nullptr);
  ~Pingmesh();

  // Fixes the node cap from `nics` and starts probing (nothing until a pinglist).
  // `on_windows_closed` (may be empty) is ProberOptions.on_windows_closed: called on the
  // prober's thread when TakeWindows has new windows; it must not block.
  void Start(const std::vector<weft::v1::Nic>& nics,
             std::function<void()> on_windows_closed = nullptr);
  void Stop();

  // Applies a pinglist from the controller (Prober::Apply), counting the outcome.
  absl::Status Apply(const weft::v1::Pinglist& pinglist);
  // The closed windows (Prober::TakeWindows, with how far they are out when
  // `closed_through` is set); a flow that lost probes in one is traced again soon.
  std::vector<weft::v1::ProbeWindow> TakeWindows(absl::Time* closed_through = nullptr);
  // The traceroutes of the flows ended since the last call (agent/probe/path_tracer.h).
  std::vector<weft::v1::ProbePathTrace> TakeTraces();
  uint64_t pinglist_version() const { return prober_->pinglist_version(); }
  // The responder's bound port; 0 when it is not answering.
  uint32_t udp_port() const { return responder_ != nullptr ? responder_->port() : 0; }
  double max_probes_per_second() const { return max_probes_per_second_; }
  // The UD responder's QP number on `device`; 0 when it has none.
  uint32_t ud_qpn(const std::string& device) const;

 private:
  Pingmesh(const weft::v1::ProbeConfig& config, std::unique_ptr<UdpProber> udp,
           std::unique_ptr<UdpResponder> responder, const Clock* clock,
           prometheus::Registry* registry, const std::string& node_name);

  const weft::v1::ProbeConfig config_;
  const std::string node_name_;
  const Clock* const clock_;
  prometheus::Registry* const registry_;
  prometheus::Counter& applied_;
  prometheus::Counter& refused_;
  std::unique_ptr<UdpProber> udp_;
  std::unique_ptr<UdpResponder> responder_;
  std::unique_ptr<rdma::Verbs> verbs_;  // null: no UD
  std::map<std::string, std::unique_ptr<UdProbeTransport>> ud_;  // by RDMA device
  std::unique_ptr<Prober> prober_;  // made by Start (the cap is known then)
  std::unique_ptr<PathTracer> tracer_;  // made by Start; null when tracing is off
  double max_probes_per_second_ = 0;
};

}  // namespace weft::agent::probe

#endif  // WEFT_AGENT_PROBE_PINGMESH_H_
