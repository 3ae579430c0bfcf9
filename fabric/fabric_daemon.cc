#include "fabric/fabric_daemon.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "placement/topology.h"
#include "security/credentials.h"

namespace weft::fabric {
namespace {

std::vector<sim::RackSpec> RacksOfSnapshot(const weft::v1::ClusterSnapshot& snapshot) {
  std::vector<sim::RackSpec> racks;
  std::map<std::string, size_t> index;
  for (const weft::v1::SnapshotNode& node : snapshot.nodes()) {
    auto [it, added] = index.emplace(node.rack(), racks.size());
    if (added) racks.push_back({.name = node.rack(), .pod = node.pod(), .nodes = {}});
    racks[it->second].nodes.push_back(node.name());
  }
  return racks;
}

sim::TwinFabricOptions FabricOptionsOf(const weft::v1::FabricConfig& config) {
  sim::TwinFabricOptions options;
  options.nics_per_node = static_cast<int>(config.nics_per_node());
  options.nic_bps = config.nic_gbps() * 1e9;
  options.uplinks_per_tor = static_cast<int>(config.uplinks_per_tor());
  options.oversubscription = config.oversubscription();
  return options;
}

std::string WithPort(const std::string& address, int port) {
  return absl::StrCat(address.substr(0, address.rfind(':')), ":", port);
}

}  // namespace

absl::StatusOr<std::vector<sim::RackSpec>> RacksOf(const weft::v1::FabricConfig& config) {
  if (config.topology_file().empty()) {
    return sim::DemoRacks(static_cast<int>(config.racks()),
                          static_cast<int>(config.nodes_per_rack()),
                          static_cast<int>(config.racks_per_pod()));
  }
  ASSIGN_OR_RETURN(const weft::v1::ClusterSnapshot snapshot,
                   placement::LoadStaticTopology(config.topology_file()));
  return RacksOfSnapshot(snapshot);
}

absl::StatusOr<std::unique_ptr<FabricDaemon>> FabricDaemon::Create(
    const weft::v1::FabricConfig& config, const Clock* clock) {
  ASSIGN_OR_RETURN(const std::vector<sim::RackSpec> racks, RacksOf(config));
  ASSIGN_OR_RETURN(sim::TwinTopology topology,
                   sim::BuildTwinTopology(racks, FabricOptionsOf(config)));
  ASSIGN_OR_RETURN(sim::Twin twin, sim::Twin::Create(std::move(topology), sim::DcqcnParams()));
  auto host = std::make_unique<TwinHost>(std::move(twin), static_cast<int>(config.gpus_per_node()));
  std::unique_ptr<FabricDaemon> daemon(new FabricDaemon(config, clock, std::move(host)));
  if (!config.controller_address().empty()) {
    ASSIGN_OR_RETURN(std::shared_ptr<grpc::ChannelCredentials> credentials,
                     security::MakeChannelCredentials(config.tls()));
    daemon->placement_ = weft::v1::PlacementService::NewStub(
        grpc::CreateChannel(config.controller_address(), credentials));
    daemon->job_generator_ = std::make_unique<JobGenerator>(
        std::vector<weft::v1::FabricJobConfig>(config.jobs().begin(), config.jobs().end()),
        daemon->twin_.get(), daemon->placement_.get(), clock);
  }
  JobGenerator* generator = daemon->job_generator_.get();
  TwinHost* twin_host = daemon->twin_.get();
  daemon->service_ = std::make_unique<FabricServiceImpl>(
      twin_host, [generator, twin_host] {
        return generator != nullptr ? generator->ListJobs() : TwinJobs(*twin_host);
      });
  const double tick_s = config.tick_ms() / 1000.0;
  daemon->ticker_ = std::make_unique<PeriodicTask>(
      clock, absl::Milliseconds(config.tick_ms()), [twin_host, tick_s] {
        const absl::Status advanced = twin_host->Advance(tick_s);
        if (!advanced.ok()) WEFT_LOG(ERROR) << "the twin cannot advance: " << advanced.message();
      });
  if (generator != nullptr) {
    daemon->job_checker_ = std::make_unique<PeriodicTask>(
        clock, absl::Milliseconds(config.job_check_interval_ms()), [generator] { generator->Check(); });
  }
  return daemon;
}

FabricDaemon::FabricDaemon(const weft::v1::FabricConfig& config, const Clock* clock,
                           std::unique_ptr<TwinHost> twin)
    : config_(config), clock_(clock), twin_(std::move(twin)) {}

FabricDaemon::~FabricDaemon() { Stop(); }

absl::Status FabricDaemon::Start() {
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.AddListeningPort(config_.listen_address(), grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot serve gRPC on ", config_.listen_address(),
                                               " (address in use, or not a local host:port?)"));
  }
  listen_address_ = WithPort(config_.listen_address(), port);
  ticker_->Start();
  if (job_checker_ != nullptr) job_checker_->Start();
  WEFT_LOG(INFO) << "weft-fabric serving grpc=" << listen_address_
                 << " nodes=" << twin_->NodeNames().size()
                 << " tick_ms=" << config_.tick_ms() << " jobs=" << config_.jobs_size()
                 << " controller=" << (config_.controller_address().empty()
                                           ? "none"
                                           : config_.controller_address());
  return absl::OkStatus();
}

void FabricDaemon::Stop() {
  if (job_checker_ != nullptr) job_checker_->Stop();
  if (ticker_ != nullptr) ticker_->Stop();
  if (server_ != nullptr) {
    server_->Shutdown();
    server_.reset();
  }
}

}  // namespace weft::fabric
