// The transport factory: picks how a job's ranks talk and builds it. RC (verbs) when
// the node has an RDMA device, TCP when it has none or when the job asks for TCP; and,
// since every rank must use the same transport, RC only if every rank has a device.
// The choice and its reason are logged and returned, e.g.
//   transport=tcp reason="no RDMA device found (ibv_get_device_list returned 0 devices)"
//
// The traffic class of the RC QPs comes from the job's QoS class (common/qos_classes.h:
// training -> 106, storage -> 98, control -> 66) unless given outright.
//
// Thread-safety: the functions are thread-safe; each rank calls CreateTransport once
// per communicator, all ranks with the same scope.
#ifndef WEFT_DATAPATH_TRANSPORT_TRANSPORT_FACTORY_H_
#define WEFT_DATAPATH_TRANSPORT_TRANSPORT_FACTORY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "datapath/collectives.h"
#include "datapath/rendezvous.h"
#include "datapath/transport.h"
#include "datapath/transport/rc_transport.h"
#include "datapath/transport/tcp_transport.h"
#include "rdma/verbs.h"

namespace weft::datapath {

enum class TransportKind { kAuto, kRc, kTcp };

// "auto", "rc", "tcp" <-> TransportKind; INVALID_ARGUMENT listing the accepted names.
absl::StatusOr<TransportKind> ParseTransportKind(absl::string_view name);
absl::string_view TransportKindName(TransportKind kind);

struct TransportRequest {
  int rank = 0;
  int size = 1;
  TransportKind kind = TransportKind::kAuto;
  // The QoS class ("" = training) whose traffic class the RC QPs carry...
  std::string qos_class;
  // ... unless this is set.
  std::optional<uint8_t> traffic_class;
  // Non-empty: this rank offers no RDMA whatever its devices, and this is why (e.g.
  // the node agent found no ACTIVE RoCE port); the job then runs over TCP (or fails,
  // when RC was asked for) and the choice's reason says so.
  std::string no_rdma_reason;
  // Prefix of every rendezvous key: unique per communicator of the job.
  std::string scope = "weft";
  RcTransportOptions rc;
  TcpTransportOptions tcp;
};

struct TransportChoice {
  TransportKind kind = TransportKind::kTcp;  // kRc or kTcp
  std::string reason;
};

// The decision, from what was asked and which ranks can do RC (index = rank).
// FAILED_PRECONDITION when RC was asked for and some rank cannot, naming those ranks.
absl::StatusOr<TransportChoice> ChooseTransport(TransportKind requested,
                                                const std::vector<bool>& rank_has_rdma,
                                                absl::string_view local_no_device_reason);

// Lists the local devices, agrees with the other ranks (through `rendezvous`, key
// "<scope>/transport"), logs the choice and builds that transport. `choice`, if given,
// receives what was picked and why.
absl::StatusOr<std::unique_ptr<Transport>> CreateTransport(rdma::Verbs& verbs,
                                                           Rendezvous& rendezvous,
                                                           const TransportRequest& request,
                                                           TransportChoice* choice = nullptr);

// CreateTransport, then a Communicator over it.
absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(
    rdma::Verbs& verbs, Rendezvous& rendezvous, const TransportRequest& request,
    const CommunicatorOptions& options = {}, TransportChoice* choice = nullptr);

}  // namespace weft::datapath

#endif  // WEFT_DATAPATH_TRANSPORT_TRANSPORT_FACTORY_H_
