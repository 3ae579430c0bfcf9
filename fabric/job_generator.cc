#include "fabric/job_generator.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_status.h"
#include "common/logging.h"

namespace weft::fabric {
namespace {

std::string PatternOf(const weft::v1::FabricJobConfig& job) {
  std::vector<std::string> parts = {job.all_reduce() == "tree" ? "tree all-reduce"
                                                               : "ring all-reduce"};
  if (job.expert_group_nodes() > 1) parts.push_back("moe all-to-all");
  if (job.pipeline_stages() > 1) parts.push_back("pipeline");
  return absl::StrJoin(parts, " + ");
}

}  // namespace

sim::TrainingJobSpec TrainingJobOf(const weft::v1::FabricJobConfig& job) {
  sim::TrainingJobSpec spec;
  spec.name = job.name();
  spec.model.parameters = job.parameters();
  if (job.bytes_per_gradient_element() > 0) {
    spec.model.bytes_per_gradient_element = job.bytes_per_gradient_element();
  }
  spec.model.tokens_per_iteration = job.tokens_per_iteration();
  spec.model.compute_s_per_iteration = job.compute_s_per_iteration();
  spec.model.alltoall_bytes_per_node = job.alltoall_bytes_per_node();
  spec.model.activation_bytes_per_node = job.activation_bytes_per_node();
  spec.layout.all_reduce = job.all_reduce() == "tree" ? sim::AllReduceAlgorithm::kDoubleBinaryTree
                                                      : sim::AllReduceAlgorithm::kRing;
  spec.layout.pipeline_stages = std::max<int>(1, job.pipeline_stages());
  spec.layout.expert_group_nodes = job.expert_group_nodes() > 1 ? job.expert_group_nodes() : 0;
  return spec;
}

weft::v1::PlacementRequest PlacementRequestOf(const weft::v1::FabricJobConfig& job) {
  weft::v1::PlacementRequest request;
  request.set_job_id(job.name());
  request.set_node_count(job.nodes());
  const sim::TrainingJobSpec spec = TrainingJobOf(job);
  if (job.pipeline_stages() > 1 || job.expert_group_nodes() > 1) {
    weft::v1::Parallelism* parallelism = request.mutable_parallelism();
    parallelism->set_pipeline(std::max<uint32_t>(1, job.pipeline_stages()));
    if (job.expert_group_nodes() > 1) parallelism->set_expert(job.expert_group_nodes());
  } else {
    request.set_pattern(weft::v1::TRAFFIC_PATTERN_RING_ALLREDUCE);
  }
  request.set_gradient_bytes(static_cast<uint64_t>(spec.model.parameters *
                                                   spec.model.bytes_per_gradient_element /
                                                   spec.layout.pipeline_stages));
  request.set_alltoall_bytes(static_cast<uint64_t>(job.alltoall_bytes_per_node()));
  request.set_activation_bytes(static_cast<uint64_t>(job.activation_bytes_per_node()));
  return request;
}

weft::v1::JobProgress ProgressOf(const sim::TwinJobStatus& status, const std::string& model) {
  weft::v1::JobProgress progress;
  progress.set_model(model);
  progress.set_iterations_done(status.iterations_done);
  progress.set_first_iteration_s(status.first_iteration_s);
  if (!status.last) return progress;
  const sim::IterationReport& last = *status.last;
  progress.set_iteration_s(last.iteration_s);
  progress.set_compute_s(last.compute_s);
  progress.set_communication_s(last.communication_s);
  progress.set_tokens_per_s(last.tokens_per_s);
  for (const sim::PhaseReport& phase : last.phases) {
    weft::v1::PhaseProgress* out = progress.add_phases();
    out->set_phase(sim::PhaseName(phase.kind));
    out->set_time_s(phase.time_s);
    out->set_algbw_bytes_per_s(phase.algbw_bytes_per_s);
    out->set_busbw_bytes_per_s(phase.busbw_bytes_per_s);
  }
  return progress;
}

namespace {

weft::v1::FabricJob FabricJobOf(const TwinHost::JobView& view) {
  weft::v1::FabricJob job;
  job.set_name(view.status.name);
  for (const std::string& node : view.nodes) job.add_nodes(node);
  for (const std::string& rack : view.racks) job.add_racks(rack);
  *job.mutable_progress() = ProgressOf(view.status, "");
  job.set_state(view.status.stalled ? "stalled: a flow of it has no path" : "running");
  const sim::PathCongestion& paths = view.status.paths;
  job.set_max_utilization(paths.max_utilization);
  job.set_max_queue_bytes(paths.max_queue_bytes);
  job.set_max_mark_probability(paths.max_mark_probability);
  job.set_max_pause_share(paths.max_pause_share);
  job.set_hottest_link(view.hottest_link);
  return job;
}

}  // namespace

weft::v1::ListFabricJobsResponse TwinJobs(const TwinHost& twin) {
  weft::v1::ListFabricJobsResponse response;
  for (const TwinHost::JobView& view : twin.Jobs()) *response.add_jobs() = FabricJobOf(view);
  return response;
}

JobGenerator::JobGenerator(std::vector<weft::v1::FabricJobConfig> jobs, TwinHost* twin,
                           weft::v1::PlacementService::StubInterface* placement,
                           const Clock* clock, absl::Duration cluster_grace,
                           absl::Duration rpc_timeout)
    : twin_(twin),
      placement_(placement),
      clock_(clock),
      rpc_timeout_(rpc_timeout),
      cluster_deadline_(clock->Now() + cluster_grace) {
  absl::MutexLock round(&round_mu_);
  for (weft::v1::FabricJobConfig& config : jobs) {
    Running& job = jobs_.emplace_back();
    job.config = std::move(config);
    job.state = "waiting for placement";
  }
  absl::MutexLock lock(&mu_);
  published_ = jobs_;
}

void JobGenerator::Configure(grpc::ClientContext* context) const {
  context->set_deadline(absl::ToChronoTime(clock_->Now() + rpc_timeout_));
}

std::string JobGenerator::WaitingForCluster(const weft::v1::ClusterSnapshot& snapshot) const {
  if (clock_->Now() >= cluster_deadline_) return "";
  std::set<std::string> registered;
  for (const weft::v1::SnapshotNode& node : snapshot.nodes()) registered.insert(node.name());
  const std::vector<std::string> nodes = twin_->NodeNames();
  const size_t present = std::count_if(nodes.begin(), nodes.end(), [&](const std::string& n) {
    return registered.count(n) > 0;
  });
  if (present == nodes.size()) return "";
  return absl::StrCat("waiting for the cluster: ", present, " of ", nodes.size(),
                      " nodes registered with the controller");
}

void JobGenerator::PlaceIfWaiting(Running& job) {
  if (!job.reservation.reservation_id().empty()) return;
  grpc::ClientContext context;
  Configure(&context);
  weft::v1::PlacementResponse placed;
  const absl::Status status =
      FromGrpcStatus(placement_->Place(&context, PlacementRequestOf(job.config), &placed));
  if (!status.ok()) {
    const std::string state = absl::StrCat("waiting for placement: ", status.message());
    if (state != job.state) WEFT_LOG(WARNING) << "job " << job.config.name() << " " << state;
    job.state = state;
    return;
  }
  const std::vector<std::string> nodes(placed.ring_order().begin(), placed.ring_order().end());
  const absl::Status started = twin_->StartJob(TrainingJobOf(job.config), nodes);
  if (!started.ok()) {
    job.state = absl::StrCat("placed, but the twin refused it: ", started.message());
    WEFT_LOG(WARNING) << "job " << job.config.name() << " " << job.state;
    grpc::ClientContext release_context;
    Configure(&release_context);
    weft::v1::ReleaseRequest release;
    release.set_reservation_id(placed.reservation_id());
    weft::v1::ReleaseResponse released;
    placement_->Release(&release_context, release, &released).ok();
    return;
  }
  job.reservation = std::move(placed);
  job.renewed_at = clock_->Now();
  job.reported_iterations = -1;
  ++job.placements;
  job.state = "running";
  WEFT_LOG(INFO) << "job " << job.config.name() << " placed reservation="
                 << job.reservation.reservation_id() << " nodes="
                 << absl::StrJoin(nodes, ",") << " placements=" << job.placements;
}

std::string JobGenerator::ReasonToReplace(
    const Running& job, const weft::v1::ClusterSnapshot& snapshot,
    const weft::v1::ListReservationsResponse& reservations) const {
  const bool held = std::any_of(
      reservations.reservations().begin(), reservations.reservations().end(),
      [&](const weft::v1::PlacementResponse& r) {
        return r.reservation_id() == job.reservation.reservation_id();
      });
  if (!held) return "its reservation is gone (released or expired)";
  std::map<std::string, const weft::v1::SnapshotNode*> by_name;
  for (const weft::v1::SnapshotNode& node : snapshot.nodes()) by_name[node.name()] = &node;
  for (const std::string& node : job.reservation.ring_order()) {
    const auto found = by_name.find(node);
    if (found == by_name.end()) return absl::StrCat("node ", node, " left the topology");
    if (found->second->drained()) return absl::StrCat("node ", node, " was drained");
  }
  return "";
}

void JobGenerator::Unplace(Running& job, const std::string& why) {
  WEFT_LOG(WARNING) << "job " << job.config.name() << " stops on reservation "
                    << job.reservation.reservation_id() << ": " << why
                    << "; placing it again";
  twin_->StopJob(job.config.name()).IgnoreError();
  grpc::ClientContext context;
  Configure(&context);
  weft::v1::ReleaseRequest release;
  release.set_reservation_id(job.reservation.reservation_id());
  weft::v1::ReleaseResponse released;
  // NOT_FOUND is fine: the reservation may be what went away.
  placement_->Release(&context, release, &released).ok();
  job.reservation.Clear();
  job.state = absl::StrCat("waiting for placement: ", why);
}

void JobGenerator::ReportAndRenew(Running& job, const std::vector<TwinHost::JobView>& views) {
  const auto view = std::find_if(views.begin(), views.end(), [&](const TwinHost::JobView& v) {
    return v.status.name == job.config.name();
  });
  if (view == views.end()) return;
  job.state = view->status.stalled ? "stalled: a flow of it has no path" : "running";
  if (view->status.iterations_done != job.reported_iterations && view->status.last) {
    grpc::ClientContext context;
    Configure(&context);
    weft::v1::ReportJobProgressRequest report;
    report.set_reservation_id(job.reservation.reservation_id());
    *report.mutable_progress() = ProgressOf(view->status, job.config.model());
    weft::v1::ReportJobProgressResponse reported;
    const absl::Status status =
        FromGrpcStatus(placement_->ReportJobProgress(&context, report, &reported));
    if (status.ok()) {
      job.reported_iterations = view->status.iterations_done;
    } else {
      WEFT_LOG(WARNING) << "job " << job.config.name()
                        << " progress not reported: " << status.message();
    }
  }
  const absl::Time expires = absl::FromUnixSeconds(job.reservation.expires_at_unix_s());
  if (clock_->Now() < job.renewed_at + (expires - job.renewed_at) / 2) return;
  grpc::ClientContext context;
  Configure(&context);
  weft::v1::RenewRequest renew;
  renew.set_reservation_id(job.reservation.reservation_id());
  weft::v1::RenewResponse renewed;
  if (placement_->Renew(&context, renew, &renewed).ok()) {
    job.reservation.set_expires_at_unix_s(renewed.expires_at_unix_s());
    job.renewed_at = clock_->Now();
  }
}

void JobGenerator::Check() {
  absl::MutexLock round(&round_mu_);
  grpc::ClientContext topology_context;
  Configure(&topology_context);
  weft::v1::GetTopologyResponse topology;
  const absl::Status topology_status = FromGrpcStatus(
      placement_->GetTopology(&topology_context, weft::v1::GetTopologyRequest(), &topology));
  grpc::ClientContext reservations_context;
  Configure(&reservations_context);
  weft::v1::ListReservationsResponse reservations;
  const absl::Status reservations_status = FromGrpcStatus(placement_->ListReservations(
      &reservations_context, weft::v1::ListReservationsRequest(), &reservations));
  const bool controller_answered = topology_status.ok() && reservations_status.ok();
  for (Running& job : jobs_) {
    if (!job.reservation.reservation_id().empty() && controller_answered) {
      const std::string why = ReasonToReplace(job, topology.snapshot(), reservations);
      if (!why.empty()) Unplace(job, why);
    }
  }
  // Without a topology, Place is tried anyway: its error says what is wrong.
  const std::string waiting = topology_status.ok() ? WaitingForCluster(topology.snapshot()) : "";
  // Placed in configuration order, after every unplacement, so freed nodes count.
  for (Running& job : jobs_) {
    if (waiting.empty()) {
      PlaceIfWaiting(job);
    } else if (job.reservation.reservation_id().empty()) {
      job.state = waiting;
    }
  }
  const std::vector<TwinHost::JobView> views = twin_->Jobs();
  for (Running& job : jobs_) {
    if (!job.reservation.reservation_id().empty()) ReportAndRenew(job, views);
  }
  absl::MutexLock lock(&mu_);
  published_ = jobs_;
}

weft::v1::ListFabricJobsResponse JobGenerator::ListJobs() const {
  const std::vector<TwinHost::JobView> views = twin_->Jobs();
  absl::MutexLock lock(&mu_);
  weft::v1::ListFabricJobsResponse response;
  for (const Running& job : published_) {
    weft::v1::FabricJob* out = response.add_jobs();
    const auto view = std::find_if(views.begin(), views.end(), [&](const TwinHost::JobView& v) {
      return v.status.name == job.config.name();
    });
    if (view != views.end() && !job.reservation.reservation_id().empty()) {
      *out = FabricJobOf(*view);
      out->mutable_progress()->set_model(job.config.model());
    } else {
      out->set_name(job.config.name());
    }
    out->set_reservation_id(job.reservation.reservation_id());
    out->set_pattern(PatternOf(job.config));
    out->set_parameters(job.config.parameters());
    out->set_placements(job.placements);
    out->set_state(job.state);
  }
  return response;
}

}  // namespace weft::fabric
