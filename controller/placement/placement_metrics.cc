#include "controller/placement/placement_metrics.h"

#include <map>
#include <string>

namespace weft::controller {
namespace {

prometheus::Family<prometheus::Gauge>& JobGauge(prometheus::Registry& registry,
                                                const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

constexpr PlacementResult kAllResults[] = {
    PlacementResult::kPlaced,   PlacementResult::kExisting, PlacementResult::kNoCapacity,
    PlacementResult::kInfeasible, PlacementResult::kConflict, PlacementResult::kInvalid,
    PlacementResult::kError};

}  // namespace

absl::string_view PlacementResultLabel(PlacementResult result) {
  switch (result) {
    case PlacementResult::kPlaced:
      return "placed";
    case PlacementResult::kExisting:
      return "existing";
    case PlacementResult::kNoCapacity:
      return "no_capacity";
    case PlacementResult::kInfeasible:
      return "infeasible";
    case PlacementResult::kConflict:
      return "conflict";
    case PlacementResult::kInvalid:
      return "invalid";
    case PlacementResult::kError:
      return "error";
  }
  return "error";
}

PlacementMetrics::PlacementMetrics(prometheus::Registry& registry)
    : placements_(prometheus::BuildCounter()
                      .Name("weft_controller_placements_total")
                      .Help("Place calls, by result (placed, existing, no_capacity, "
                            "infeasible, conflict, invalid, error).")
                      .Register(registry)),
      reservations_(prometheus::BuildGauge()
                        .Name("weft_controller_reservations")
                        .Help("Live placement reservations.")
                        .Register(registry)
                        .Add({})),
      reserved_nodes_(prometheus::BuildGauge()
                          .Name("weft_controller_reserved_nodes")
                          .Help("Nodes held by live placement reservations.")
                          .Register(registry)
                          .Add({})),
      job_iteration_s_(JobGauge(registry, "weft_job_iteration_seconds",
                                "A placed job's newest iteration time, by job_id.")),
      job_first_iteration_s_(JobGauge(
          registry, "weft_job_first_iteration_seconds",
          "A placed job's first iteration time on its reservation, the baseline it is "
          "judged by, by job_id.")),
      job_communication_s_(JobGauge(
          registry, "weft_job_communication_seconds",
          "Time of a placed job's newest iteration spent in collectives and sends, by job_id.")),
      job_tokens_per_s_(JobGauge(registry, "weft_job_tokens_per_second",
                                 "A placed job's newest throughput in tokens/s, by job_id.")),
      job_iterations_(JobGauge(
          registry, "weft_job_iterations",
          "Iterations a placed job has done on its reservation (from 0 again when it is "
          "placed again), by job_id.")),
      job_nodes_(JobGauge(registry, "weft_job_nodes", "Nodes a placed job holds, by job_id.")) {
  for (PlacementResult result : kAllResults) {
    placements_.Add({{"result", std::string(PlacementResultLabel(result))}});
  }
}

void PlacementMetrics::PlacementDone(PlacementResult result) {
  placements_.Add({{"result", std::string(PlacementResultLabel(result))}}).Increment();
}

void PlacementMetrics::SetReservations(int64_t reservations, int64_t reserved_nodes) {
  reservations_.Set(static_cast<double>(reservations));
  reserved_nodes_.Set(static_cast<double>(reserved_nodes));
}

void PlacementMetrics::JobReported(absl::string_view job_id,
                                   const weft::v1::JobProgress& progress, int64_t nodes) {
  absl::MutexLock lock(&mu_);
  auto [it, added] = jobs_.try_emplace(job_id);
  if (added) {
    const std::map<std::string, std::string> labels = {{"job_id", std::string(job_id)}};
    it->second = JobSeries{&job_iteration_s_.Add(labels),  &job_first_iteration_s_.Add(labels),
                           &job_communication_s_.Add(labels), &job_tokens_per_s_.Add(labels),
                           &job_iterations_.Add(labels),    &job_nodes_.Add(labels)};
  }
  const JobSeries& series = it->second;
  series.iteration_s->Set(progress.iteration_s());
  series.first_iteration_s->Set(progress.first_iteration_s());
  series.communication_s->Set(progress.communication_s());
  series.tokens_per_s->Set(progress.tokens_per_s());
  series.iterations->Set(static_cast<double>(progress.iterations_done()));
  series.nodes->Set(static_cast<double>(nodes));
}

void PlacementMetrics::RetainJobs(const absl::flat_hash_set<std::string>& live_job_ids) {
  absl::MutexLock lock(&mu_);
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (live_job_ids.contains(it->first)) {
      ++it;
      continue;
    }
    const JobSeries& series = it->second;
    job_iteration_s_.Remove(series.iteration_s);
    job_first_iteration_s_.Remove(series.first_iteration_s);
    job_communication_s_.Remove(series.communication_s);
    job_tokens_per_s_.Remove(series.tokens_per_s);
    job_iterations_.Remove(series.iterations);
    job_nodes_.Remove(series.nodes);
    jobs_.erase(it++);
  }
}

}  // namespace weft::controller
