#include "agent/backend_factory.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/fabric_backend.h"
#include "agent/linux/ethtool_stats.h"
#include "agent/linux/linux_backend.h"
#include "rdma/verbs_ibv.h"
#include "agent/lldp.h"
#include "agent/sim_backend.h"
#include "agent/tunables/dcb_client.h"
#include "common/logging.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"

namespace weft::agent {

namespace {

// Plaintext on purpose: the twin is a simulation that runs next to its agents.
absl::StatusOr<std::unique_ptr<NicBackend>> MakeFabricBackend(const weft::v1::AgentConfig& config,
                                                              const Clock* clock) {
  const std::string& address = config.fabric().address();
  if (address.empty()) {
    return absl::InvalidArgumentError(
        "backend 'fabric' needs fabric.address (--fabric HOST:PORT), the address of "
        "weft-fabric's gRPC server; it is empty");
  }
  FabricBackendOptions options;
  options.address = address;
  options.node = config.node_name();
  options.rack = config.rack();
  options.pod = config.pod();
  for (const std::string& given : config.fabric().nic_ipv4()) {
    in_addr address{};
    if (inet_pton(AF_INET, given.c_str(), &address) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("fabric.nic_ipv4: '", given, "' is not a dotted IPv4 address"));
    }
    options.nic_ipv4.push_back(ntohl(address.s_addr));
  }
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  return std::unique_ptr<NicBackend>(std::make_unique<FabricNicBackend>(
      std::move(options), weft::v1::FabricService::NewStub(channel), clock));
}

absl::StatusOr<std::unique_ptr<NicBackend>> MakeBareBackend(const weft::v1::AgentConfig& config,
                                                            const Clock* clock) {
  if (config.backend() == "simulated") {
    absl::StatusOr<std::unique_ptr<SimBackend>> sim =
        SimBackend::Create(config.simulated(), config.node_name(), clock);
    if (!sim.ok()) return sim.status();
    return std::unique_ptr<NicBackend>(std::move(*sim));
  }
  if (config.backend() == "linux") {
    const weft::v1::LinuxBackendConfig& linux_config = config.linux();
    LinuxBackendOptions options;
    options.root = linux_config.root();
    options.include_devices.assign(linux_config.include_devices().begin(),
                                   linux_config.include_devices().end());
    options.exclude_devices.assign(linux_config.exclude_devices().begin(),
                                   linux_config.exclude_devices().end());
    options.include_netdevs.assign(linux_config.include_netdevs().begin(),
                                   linux_config.include_netdevs().end());
    options.exclude_netdevs.assign(linux_config.exclude_netdevs().begin(),
                                   linux_config.exclude_netdevs().end());
    auto verbs = std::make_shared<rdma::IbvVerbs>();
    options.verbs = verbs;
    options.verbs_no_device_reason = [verbs] { return verbs->NoDeviceReason(); };
    absl::StatusOr<std::unique_ptr<NetlinkDcbClient>> dcb = NetlinkDcbClient::Open();
    if (dcb.ok()) {
      options.dcb = std::move(*dcb);
    } else {
      WEFT_LOG(WARNING) << "QoS tunables unavailable: " << dcb.status().message();
    }
    return std::unique_ptr<NicBackend>(std::make_unique<LinuxNicBackend>(
        std::move(options), std::make_unique<IoctlEthtoolReader>(), clock));
  }
  if (config.backend() == "fabric") return MakeFabricBackend(config, clock);
  return absl::InvalidArgumentError(
      absl::StrCat("backend '", config.backend(),
                   "' is not a known NIC backend; accepted: simulated, linux, fabric"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<NicBackend>> MakeNicBackend(const weft::v1::AgentConfig& config,
                                                           const Clock* clock) {
  absl::StatusOr<std::unique_ptr<NicBackend>> backend = MakeBareBackend(config, clock);
  if (!backend.ok()) return backend;
  const std::string& lldp = config.lldp();
  if (lldp == "off" || lldp.empty() || (lldp == "auto" && config.backend() != "linux")) {
    return backend;
  }
  return std::unique_ptr<NicBackend>(std::make_unique<LldpNicBackend>(
      *std::move(backend), std::make_unique<LldpcliReader>(lldp == "auto" ? "" : lldp)));
}

}  // namespace weft::agent
