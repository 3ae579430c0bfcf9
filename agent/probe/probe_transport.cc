#include "agent/probe/probe_transport.h"

#include <tuple>

#include "absl/strings/str_cat.h"

namespace weft::agent::probe {
namespace {

auto Key(const ProbeFlow& f) {
  return std::tie(f.peer_node, f.peer_nic, f.peer_address, f.peer_port, f.source_nic,
                  f.source_address, f.source_port, f.dscp, f.transport, f.peer_gid,
                  f.peer_qpn);
}

}  // namespace

std::string ProbeFlow::ToString() const {
  return absl::StrCat(peer_node, "/", peer_nic.empty() ? "-" : peer_nic, " ", peer_address,
                      ":", peer_port, " sport=", source_port, " dscp=", dscp,
                      transport == weft::v1::PROBE_TRANSPORT_RDMA_UD ? " rdma_ud" : " udp");
}

bool operator<(const ProbeFlow& a, const ProbeFlow& b) { return Key(a) < Key(b); }
bool operator==(const ProbeFlow& a, const ProbeFlow& b) { return Key(a) == Key(b); }

const char* TimestampSourceName(TimestampSource source) {
  switch (source) {
    case TimestampSource::kHardware:
      return "hardware";
    case TimestampSource::kSoftware:
      return "software";
    case TimestampSource::kUser:
      return "user";
  }
  return "user";
}

}  // namespace weft::agent::probe
