#include "datapath/transport/transport_factory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/qos_classes.h"
#include "common/status_macros.h"

namespace weft::datapath {

using rdma::DeviceInfo;
using rdma::Verbs;

absl::StatusOr<TransportKind> ParseTransportKind(absl::string_view name) {
  if (name == "auto" || name.empty()) return TransportKind::kAuto;
  if (name == "rc") return TransportKind::kRc;
  if (name == "tcp") return TransportKind::kTcp;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown transport '", name, "'; accepted: auto, rc, tcp"));
}

absl::string_view TransportKindName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kAuto:
      return "auto";
    case TransportKind::kRc:
      return "rc";
    case TransportKind::kTcp:
      return "tcp";
  }
  return "unknown";
}

absl::StatusOr<TransportChoice> ChooseTransport(TransportKind requested,
                                                const std::vector<bool>& rank_has_rdma,
                                                absl::string_view local_no_device_reason) {
  if (requested == TransportKind::kTcp) {
    return TransportChoice{TransportKind::kTcp, "TCP requested"};
  }
  std::vector<int> without;
  for (size_t rank = 0; rank < rank_has_rdma.size(); ++rank) {
    if (!rank_has_rdma[rank]) without.push_back(static_cast<int>(rank));
  }
  if (without.empty()) {
    return TransportChoice{TransportKind::kRc, requested == TransportKind::kRc
                                                   ? "RC requested; every rank has an RDMA device"
                                                   : "every rank has an RDMA device"};
  }
  const bool all_without = without.size() == rank_has_rdma.size();
  std::string reason =
      all_without && !local_no_device_reason.empty()
          ? std::string(local_no_device_reason)
          : absl::StrCat(without.size() == 1 ? "rank " : "ranks ", absl::StrJoin(without, ", "),
                         without.size() == 1 ? " has" : " have", " no RDMA device");
  if (requested == TransportKind::kRc) {
    return absl::FailedPreconditionError(absl::StrCat("RC transport requested but ", reason));
  }
  return TransportChoice{TransportKind::kTcp, reason};
}

absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(Verbs& verbs, Rendezvous& rendezvous,
                                                           const TransportRequest& request,
                                                           TransportChoice* choice_out) {
  bool local_rdma = false;
  std::string no_device_reason;
  if (!request.no_rdma_reason.empty()) {
    no_device_reason = request.no_rdma_reason;
  } else if (request.kind != TransportKind::kTcp) {
    absl::StatusOr<std::vector<DeviceInfo>> devices = verbs.ListDevices();
    if (!devices.ok()) {
      no_device_reason = absl::StrCat("no usable RDMA device (", devices.status().message(), ")");
    } else if (devices->empty()) {
      no_device_reason = "no RDMA device found (ibv_get_device_list returned 0 devices)";
    } else {
      local_rdma = true;
    }
  }
  // Every rank must pick the same transport: share who can do RC.
  ASSIGN_OR_RETURN(std::vector<std::string> capabilities,
                   ExchangeAll(rendezvous, request.scope + "/transport", request.rank, request.size,
                               local_rdma ? "rc" : "tcp", request.tcp.connect_timeout));
  std::vector<bool> rank_has_rdma;
  for (const std::string& capability : capabilities) rank_has_rdma.push_back(capability == "rc");
  ASSIGN_OR_RETURN(TransportChoice choice,
                   ChooseTransport(request.kind, rank_has_rdma, no_device_reason));
  WEFT_LOG(INFO) << "rank=" << request.rank << " transport=" << TransportKindName(choice.kind)
                 << " reason=\"" << choice.reason << "\"";
  if (choice_out != nullptr) *choice_out = choice;

  if (choice.kind == TransportKind::kTcp) {
    TcpTransportOptions tcp = request.tcp;
    tcp.rendezvous_key = request.scope + "/tcp";
    ASSIGN_OR_RETURN(std::unique_ptr<TcpTransport> transport,
                     TcpTransport::Create(request.rank, request.size, rendezvous, tcp));
    return std::unique_ptr<Transport>(std::move(transport));
  }
  RcTransportOptions rc = request.rc;
  rc.rendezvous_key = request.scope + "/rc";
  if (request.traffic_class.has_value()) {
    rc.traffic_class = *request.traffic_class;
  } else {
    ASSIGN_OR_RETURN(QosClass qos, FindQosClass(request.qos_class));
    rc.traffic_class = static_cast<uint8_t>(qos.traffic_class);
  }
  ASSIGN_OR_RETURN(std::unique_ptr<RcTransport> transport,
                   RcTransport::Create(request.rank, request.size, verbs, rendezvous, rc));
  WEFT_LOG(INFO) << "rank=" << request.rank << " rdma device=" << transport->device_name()
                 << " gid_index=" << transport->local_gid().index
                 << " gid=" << transport->local_gid().gid.ToString()
                 << " traffic_class=" << int{rc.traffic_class};
  return std::unique_ptr<Transport>(std::move(transport));
}

absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(Verbs& verbs,
                                                                 Rendezvous& rendezvous,
                                                                 const TransportRequest& request,
                                                                 const CommunicatorOptions& options,
                                                                 TransportChoice* choice) {
  ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport,
                   CreateTransport(verbs, rendezvous, request, choice));
  return Communicator::Create(std::move(transport), options);
}

}  // namespace weft::datapath
