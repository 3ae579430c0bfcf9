// Fuzzes ParseLldpKeyValue (agent/lldp.h), the parser of `lldpcli -f keyvalue show
// neighbors`. Its input comes from whatever the switches advertise (names and port
// descriptions are free text), so it must accept or refuse any bytes without crashing.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "agent/lldp.h"
#include "proto/weft/v1/node.pb.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<std::map<std::string, weft::v1::LldpNeighbor>> neighbors =
      weft::agent::ParseLldpKeyValue(text);
  if (!neighbors.ok()) {
    FUZZ_CHECK(neighbors.status().code() == absl::StatusCode::kInvalidArgument)
        << neighbors.status();
    FUZZ_CHECK(absl::StrContains(neighbors.status().message(), "has no '='"))
        << neighbors.status();
    return 0;
  }
  for (const auto& [ifname, neighbor] : *neighbors) {
    // What the agent registers with must survive the wire: proto3 strings are UTF-8
    // (bytes that are not become '?').
    weft::v1::Nic nic;
    nic.set_netdev(ifname);
    *nic.mutable_lldp_neighbor() = neighbor;
    weft::v1::Nic parsed;
    FUZZ_CHECK(parsed.ParseFromString(nic.SerializeAsString())) << "'" << ifname << "'";
    // Every interface and value comes from an "lldp.<ifname>.<field>=<value>" line:
    // where no byte had to be replaced, the text holds it as is.
    const bool replaced = absl::StrContains(ifname, "?") ||
                          absl::StrContains(neighbor.chassis_name(), "?") ||
                          absl::StrContains(neighbor.port_id(), "?");
    if (replaced) continue;
    FUZZ_CHECK(absl::StrContains(text, "lldp." + ifname + ".")) << "'" << ifname << "'";
    FUZZ_CHECK(absl::StrContains(text, neighbor.chassis_name()));
    FUZZ_CHECK(absl::StrContains(text, neighbor.port_id()));
  }
  return 0;
}
