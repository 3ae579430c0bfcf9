#include "agent/fabric_backend.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/host_counters.h"
#include "agent/tunables/tunable_params.h"
#include "grpcpp/client_context.h"
#include "rdma/verbs.h"

namespace weft::agent {
namespace {

void SetDeadline(const FabricBackendOptions& options, grpc::ClientContext* context) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + options.rpc_timeout));
}

// A failed call to the twin as an error a person can act on: where the twin was
// expected and what to check.
absl::Status FabricCallError(const grpc::Status& status, absl::string_view rpc,
                             const FabricBackendOptions& options) {
  const std::string& why = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::UnavailableError(absl::StrCat(
          "the fabric twin at ", options.address, " did not answer ", rpc, " (", why,
          "); is weft-fabric running? Start it, or point fabric.address (--fabric) at the "
          "address it listens on"));
    case grpc::StatusCode::NOT_FOUND:
      return absl::NotFoundError(absl::StrCat(
          "node '", options.node, "' is not in the fabric twin at ", options.address, " (", rpc,
          ": ", why, "); set node_name (--node) to one of the twin's nodes"));
    default:
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          absl::StrCat(rpc, " at the fabric twin ", options.address, ": ", why));
  }
}

// The host's value of `spec` in `names`, under its plain name or, for a hardware
// counter, a switchdev representor's vport_ name (as the Linux backend looks for it).
const uint64_t* FindHostValue(const google::protobuf::Map<std::string, uint64_t>& names,
                              const HostCounterSpec& spec) {
  auto it = names.find(spec.file);
  if (it == names.end() && spec.group != CounterGroup::kPort) {
    it = names.find(absl::StrCat(kVportPrefix, spec.file));
  }
  return it == names.end() ? nullptr : &it->second;
}

}  // namespace

RawNicReading ReadingFromFabricNic(const weft::v1::FabricNic& nic, absl::Time timestamp) {
  RawNicReading reading;
  reading.device = nic.nic().device();
  reading.port = nic.nic().port();
  reading.timestamp = timestamp;
  reading.port_state = nic.nic().state();
  const weft::v1::FabricNicCounters& host = nic.counters();
  const bool has_hw_counters = !host.hw_counters().empty();
  const bool is_roce = IsRoceLinkLayer(nic.nic().link_layer());
  if (!has_hw_counters) reading.missing_counters.push_back("hw_counters/");
  for (const HostCounterSpec& spec : HostCounterSpecs()) {
    const auto& names =
        spec.group == CounterGroup::kPort ? host.port_counters() : host.hw_counters();
    if (const uint64_t* value = FindHostValue(names, spec)) {
      SetHostCounter(spec, *value, &reading.counters);
    } else if (ExpectedOnPort(spec, has_hw_counters, is_roce)) {
      reading.missing_counters.push_back(spec.file);
    }
  }
  std::sort(reading.missing_counters.begin(), reading.missing_counters.end());
  reading.counters.pfc = PfcFromEthtool(host.ethtool());
  return reading;
}

FabricNicTunables::FabricNicTunables(weft::v1::FabricService::StubInterface* fabric,
                                     const FabricBackendOptions* options,
                                     const weft::v1::NicTunablesReading& reading)
    : fabric_(fabric), options_(options) {
  Refresh(reading);
}

void FabricNicTunables::Refresh(const weft::v1::NicTunablesReading& reading) {
  model_ = std::make_unique<SimNicTunables>(reading.device(), reading.qos(), reading.dcqcn());
  twin_qos_ = reading.qos();
  twin_dcqcn_ = reading.dcqcn();
}

absl::StatusOr<std::string> FabricNicTunables::Read(absl::string_view parameter) {
  return model_->Read(parameter);
}

absl::Status FabricNicTunables::Write(absl::string_view parameter, absl::string_view value) {
  absl::Status accepted = model_->Write(parameter, value);
  if (!accepted.ok()) return accepted;  // refused like a NIC would: nothing to push
  weft::v1::NodeQos qos;
  weft::v1::DcqcnParams dcqcn;
  ParamsToProto(model_->values(), &qos, &dcqcn);
  absl::Status pushed = Push(qos, dcqcn);
  if (!pushed.ok()) {
    // The twin kept its old state; so does this NIC's view of it.
    model_ = std::make_unique<SimNicTunables>(model_->device(), twin_qos_, twin_dcqcn_);
    return pushed;
  }
  twin_qos_ = std::move(qos);
  twin_dcqcn_ = std::move(dcqcn);
  return absl::OkStatus();
}

absl::Status FabricNicTunables::Push(const weft::v1::NodeQos& qos,
                                     const weft::v1::DcqcnParams& dcqcn) {
  weft::v1::SetNicTunablesRequest request;
  request.set_node(options_->node);
  request.set_device(model_->device());
  *request.mutable_qos() = qos;
  *request.mutable_dcqcn() = dcqcn;
  weft::v1::SetNicTunablesResponse response;
  grpc::ClientContext context;
  SetDeadline(*options_, &context);
  grpc::Status status = fabric_->SetNicTunables(&context, request, &response);
  if (status.ok()) return absl::OkStatus();
  return FabricCallError(status, absl::StrCat("SetNicTunables of ", model_->device()), *options_);
}

FabricNicBackend::FabricNicBackend(FabricBackendOptions options,
                                   std::unique_ptr<weft::v1::FabricService::StubInterface> fabric,
                                   const Clock* clock)
    : options_(std::move(options)), fabric_(std::move(fabric)), clock_(clock) {}

absl::StatusOr<weft::v1::ReadNodeResponse> FabricNicBackend::ReadNode() {
  weft::v1::ReadNodeRequest request;
  request.set_node(options_.node);
  weft::v1::ReadNodeResponse response;
  grpc::ClientContext context;
  SetDeadline(options_, &context);
  grpc::Status status = fabric_->ReadNode(&context, request, &response);
  if (!status.ok()) return FabricCallError(status, "ReadNode", options_);
  return response;
}

std::vector<std::string> FabricNicBackend::NodeNotes(const weft::v1::ReadNodeResponse& node) const {
  std::vector<std::string> notes;
  if (node.rack() != options_.rack || node.pod() != options_.pod) {
    // The controller places by the agent's rack and pod; a twin that wires the node
    // elsewhere makes its locality claims wrong.
    notes.push_back(absl::StrCat("the fabric twin at ", options_.address, " puts node '",
                                 options_.node, "' in rack '", node.rack(), "' pod '",
                                 node.pod(), "'; this agent reports rack '", options_.rack,
                                 "' pod '", options_.pod, "' (its config) to the controller"));
  }
  return notes;
}

absl::StatusOr<NodeInventory> FabricNicBackend::Discover() {
  absl::StatusOr<weft::v1::ReadNodeResponse> node = ReadNode();
  if (!node.ok()) return node.status();
  NodeInventory inventory;
  inventory.notes = NodeNotes(*node);
  inventory.gpus.assign(node->gpus().begin(), node->gpus().end());
  devices_.clear();
  tunables_.clear();
  for (const weft::v1::FabricNic& nic : node->nics()) {
    inventory.nics.push_back(nic.nic());
    if (inventory.nics.size() <= options_.nic_ipv4.size()) {
      const std::string given =
          rdma::Gid::FromIpv4(options_.nic_ipv4[inventory.nics.size() - 1]).ToString();
      for (weft::v1::GidEntry& gid : *inventory.nics.back().mutable_gids()) {
        absl::StatusOr<rdma::Gid> parsed = rdma::Gid::Parse(gid.gid());
        if (parsed.ok() && parsed->IsIpv4Mapped()) gid.set_gid(given);
      }
    }
    devices_.push_back(nic.nic().device());
    // As on a real node, QoS and DCQCN are Ethernet settings: none on another link layer.
    if (!IsRoceLinkLayer(nic.nic().link_layer())) continue;
    weft::v1::NicTunablesReading reading = nic.tunables();
    reading.set_device(nic.nic().device());
    tunables_.push_back(std::make_unique<FabricNicTunables>(fabric_.get(), &options_, reading));
  }
  discovered_ = true;
  return inventory;
}

absl::StatusOr<std::vector<RawNicReading>> FabricNicBackend::ReadCounters() {
  if (!discovered_) {
    absl::Status discovered = Discover().status();
    if (!discovered.ok()) return discovered;
  }
  absl::StatusOr<weft::v1::ReadNodeResponse> node = ReadNode();
  if (!node.ok()) return node.status();
  const absl::Time now = clock_->Now();
  std::vector<RawNicReading> readings;
  for (const std::string& device : devices_) {
    auto nic = std::find_if(node->nics().begin(), node->nics().end(),
                            [&](const weft::v1::FabricNic& n) { return n.nic().device() == device; });
    if (nic == node->nics().end()) {
      RawNicReading gone;
      gone.device = device;
      gone.timestamp = now;
      gone.error = absl::StrCat("device ", device, " is no longer in the fabric twin's node '",
                                options_.node, "'");
      readings.push_back(std::move(gone));
      continue;
    }
    readings.push_back(ReadingFromFabricNic(*nic, now));
    if (FabricNicTunables* tunables = TunablesOf(device)) {
      weft::v1::NicTunablesReading twin_state = nic->tunables();
      twin_state.set_device(device);
      tunables->Refresh(twin_state);
    }
  }
  return readings;
}

FabricNicTunables* FabricNicBackend::TunablesOf(const std::string& device) {
  for (const std::unique_ptr<FabricNicTunables>& nic : tunables_) {
    if (nic->device() == device) return nic.get();
  }
  return nullptr;
}

std::vector<NicTunables*> FabricNicBackend::Tunables() {
  std::vector<NicTunables*> out;
  for (const std::unique_ptr<FabricNicTunables>& nic : tunables_) out.push_back(nic.get());
  return out;
}

}  // namespace weft::agent
