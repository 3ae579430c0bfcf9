#include "topology/cabling.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft::topology {
namespace {

using weft::v1::CablingFinding;
using weft::v1::CablingReport;
using weft::v1::RackDesign;

// The switch NIC `index` of a node in `rack` should reach; "" when the design says none.
std::string ExpectedSwitch(const RackDesign& rack, int index) {
  if (!rack.tor().empty()) return rack.tor();
  if (index < rack.rail_switches_size()) return rack.rail_switches(index);
  return "";
}

int ExpectedNicCount(const RackDesign& rack, int observed_nics) {
  return rack.tor().empty() ? rack.rail_switches_size() : observed_nics;
}

CablingFinding* AddFinding(CablingReport* report, weft::v1::CablingProblem problem,
                           const std::string& node, const std::string& nic, int nic_index,
                           const std::string& expected, const std::string& observed) {
  CablingFinding* finding = report->add_findings();
  finding->set_problem(problem);
  finding->set_node(node);
  finding->set_nic(nic);
  finding->set_nic_index(nic_index);
  finding->set_expected(expected);
  finding->set_observed(observed);
  return finding;
}

void CheckNode(const ObservedNode& node, const std::string& designed_rack,
               const absl::flat_hash_map<std::string, const RackDesign*>& racks,
               const absl::flat_hash_map<std::string, std::string>& rack_of_switch,
               CablingReport* report) {
  // Whole node in another rack?
  int heard = 0;
  std::map<std::string, int> other_racks;
  for (const ObservedNic& nic : node.nics) {
    if (nic.switch_name.empty()) continue;
    ++heard;
    auto owner = rack_of_switch.find(nic.switch_name);
    if (owner != rack_of_switch.end() && owner->second != designed_rack) {
      ++other_racks[owner->second];
    }
  }
  for (const auto& [rack, count] : other_racks) {
    if (2 * count > heard) {
      AddFinding(report, weft::v1::CABLING_PROBLEM_WRONG_RACK, node.name, "", -1,
                 designed_rack, rack)
          ->set_action(absl::StrCat(count, " of its ", heard, " cabled NICs reach rack ", rack,
                                    "'s switches: move the node to rack ", designed_rack,
                                    " or list it under rack ", rack, " in the design"));
      return;
    }
  }

  auto design = racks.find(designed_rack);
  if (design == racks.end()) return;  // no intended cabling declared
  const RackDesign& rack = *design->second;
  const int nic_count = static_cast<int>(node.nics.size());
  for (int i = 0; i < std::max(nic_count, ExpectedNicCount(rack, nic_count)); ++i) {
    const std::string expected = ExpectedSwitch(rack, i);
    if (expected.empty()) continue;
    if (i >= nic_count) {
      AddFinding(report, weft::v1::CABLING_PROBLEM_MISSING_LINK, node.name, "", i, expected, "")
          ->set_action(absl::StrCat("the node reports no NIC ", i, " for the link to ", expected,
                                    ": check that the NIC is installed and its driver loaded"));
      continue;
    }
    const ObservedNic& nic = node.nics[i];
    if (nic.switch_name.empty()) {
      AddFinding(report, weft::v1::CABLING_PROBLEM_MISSING_LINK, node.name, nic.device, i,
                 expected, "")
          ->set_action(absl::StrCat("no LLDP neighbor on ", nic.device,
                                    ": check its cable to ", expected,
                                    " and that lldpd runs on the node"));
    } else if (nic.switch_name != expected) {
      const std::string where =
          nic.port.empty() ? nic.switch_name : absl::StrCat(nic.switch_name, " port ", nic.port);
      AddFinding(report, weft::v1::CABLING_PROBLEM_MISWIRED, node.name, nic.device, i, expected,
                 where)
          ->set_action(absl::StrCat("move the cable of ", nic.device, " from ", where, " to ",
                                    expected));
    }
  }
}

}  // namespace

std::string LldpSwitchName(const weft::v1::LldpNeighbor& neighbor) {
  return neighbor.chassis_name().empty() ? neighbor.chassis_id() : neighbor.chassis_name();
}

std::vector<ObservedNode> ObservedFromSnapshot(const weft::v1::ClusterSnapshot& snapshot) {
  std::vector<ObservedNode> nodes;
  nodes.reserve(snapshot.nodes_size());
  for (const weft::v1::SnapshotNode& node : snapshot.nodes()) {
    ObservedNode& out = nodes.emplace_back();
    out.name = node.name();
    out.rack = node.rack();
    for (const weft::v1::SnapshotNic& nic : node.nics()) {
      out.nics.push_back({nic.device(), nic.lldp_switch(), nic.lldp_port()});
    }
  }
  return nodes;
}

std::optional<RackInference> InferRack(const std::vector<ObservedNic>& nics) {
  std::map<std::string, int> count;  // sorted: the group name is deterministic
  int heard = 0;
  for (const ObservedNic& nic : nics) {
    if (nic.switch_name.empty()) continue;
    ++count[nic.switch_name];
    ++heard;
  }
  if (heard == 0) return std::nullopt;
  std::vector<std::string> switches;
  for (const auto& [name, n] : count) {
    if (2 * n > heard) return RackInference{name, false};
    switches.push_back(name);
  }
  return RackInference{absl::StrJoin(switches, "+"), true};
}

std::vector<std::string> InferRails(const std::vector<ObservedNode>& nodes) {
  size_t width = 0;
  for (const ObservedNode& node : nodes) width = std::max(width, node.nics.size());
  std::vector<std::string> rails(width);
  for (size_t i = 0; i < width; ++i) {
    std::map<std::string, int> count;
    for (const ObservedNode& node : nodes) {
      if (i < node.nics.size() && !node.nics[i].switch_name.empty()) {
        ++count[node.nics[i].switch_name];
      }
    }
    int best = 0;
    for (const auto& [name, n] : count) {
      if (n > best) {  // strictly more: ties keep the smaller name
        best = n;
        rails[i] = name;
      }
    }
  }
  return rails;
}

absl::StatusOr<CablingReport> CheckCabling(const weft::v1::StaticTopology& design,
                                           const std::vector<ObservedNode>& observed) {
  absl::flat_hash_map<std::string, const RackDesign*> racks;
  absl::flat_hash_map<std::string, std::string> rack_of_switch;
  for (const RackDesign& rack : design.racks()) {
    if (!racks.emplace(rack.name(), &rack).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("design: rack ", rack.name(), " is listed twice in racks"));
    }
    if (!rack.tor().empty() && rack.rail_switches_size() > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "design: rack ", rack.name(), " has both tor and rail_switches; give one"));
    }
    std::vector<std::string> switches(rack.rail_switches().begin(), rack.rail_switches().end());
    if (!rack.tor().empty()) switches.push_back(rack.tor());
    for (const std::string& name : switches) {
      auto [it, inserted] = rack_of_switch.emplace(name, rack.name());
      if (!inserted && it->second != rack.name()) {
        return absl::InvalidArgumentError(absl::StrCat("design: switch ", name,
                                                       " is declared by racks ", it->second,
                                                       " and ", rack.name()));
      }
    }
  }
  absl::flat_hash_map<std::string, std::string> rack_of_node;
  for (const weft::v1::SnapshotNode& node : design.nodes()) {
    if (!rack_of_node.emplace(node.name(), node.rack()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("design: node ", node.name(), " is listed twice in nodes"));
    }
  }

  CablingReport report;
  for (const ObservedNode& node : observed) {
    auto designed = rack_of_node.find(node.name);
    if (designed == rack_of_node.end()) {
      std::string rack = node.rack;
      if (rack.empty()) {
        if (std::optional<RackInference> inferred = InferRack(node.nics)) rack = inferred->rack;
      }
      AddFinding(&report, weft::v1::CABLING_PROBLEM_NOT_IN_DESIGN, node.name, "", -1, "", rack)
          ->set_action(rack.empty()
                           ? "add the node to the design's nodes"
                           : absl::StrCat("add the node to the design's nodes (it is in rack ",
                                          rack, ")"));
      continue;
    }
    CheckNode(node, designed->second, racks, rack_of_switch, &report);
  }
  std::stable_sort(report.mutable_findings()->begin(), report.mutable_findings()->end(),
                   [](const CablingFinding& a, const CablingFinding& b) {
                     if (a.node() != b.node()) return a.node() < b.node();
                     return a.nic_index() < b.nic_index();
                   });
  return report;
}

}  // namespace weft::topology
