// Search strategies over the unit cube [0, 1]^d (tuning/knobs.h maps a point to a DCQCN
// profile), maximising an objective. Both are deterministic for a seed (tuning/rng.h) and
// bounded: they stop at max_evaluations or when max_wall has passed on the injected clock,
// whichever comes first, and evaluate the start point first, so their best is never worse
// than the start (the profile in force).
//   SimulatedAnnealing  Paraleon's choice (fabric-facts §7): Gaussian steps on a random
//       half of the coordinates, shrinking with the temperature; a worse point is accepted
//       with probability exp(Δ/T); geometric cooling over the evaluation budget; back to
//       the best point after 20 steps without improvement.
//   SurrogateSearch     Bayesian optimisation: a Gaussian-process surrogate (RBF kernel,
//       fixed length scale, scores normalised) over every evaluated point, the next point
//       the one of 1,024 random and near-best candidates with the highest expected
//       improvement; a random design of 2·d points (with the start) first.
// Not thread-safe per call (the objective is called from the calling thread); calls share
// nothing.
#ifndef WEFT_TUNING_SEARCH_H_
#define WEFT_TUNING_SEARCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace weft::tuning {

// Higher is better. An error stops the search and is returned.
using SearchObjective = std::function<absl::StatusOr<double>(const std::vector<double>& point)>;

struct SearchOptions {
  uint64_t seed = 1;
  int max_evaluations = 100;
  absl::Duration max_wall = absl::Minutes(10);
  const Clock* clock = nullptr;  // required: the wall-time bound is read on it
  std::vector<double> start;     // in [0, 1]^d; its size is d
};

enum class StopReason { kEvaluations, kWallTime };

struct SearchResult {
  std::string strategy;
  std::vector<double> best_point;
  double best_score = 0;
  int evaluations = 0;
  // best_so_far[i]: the best score after evaluation i + 1.
  std::vector<double> best_so_far;
  absl::Duration wall;
  StopReason stop = StopReason::kEvaluations;
};

// InvalidArgument for no clock, an empty start or one outside [0, 1], or
// max_evaluations < 1; otherwise the objective's first error, if any.
absl::StatusOr<SearchResult> SimulatedAnnealing(const SearchObjective& objective,
                                                const SearchOptions& options);
absl::StatusOr<SearchResult> SurrogateSearch(const SearchObjective& objective,
                                             const SearchOptions& options);

// The evaluation after which best_so_far first reaches `target` (1-based), or -1.
int EvaluationsToReach(const SearchResult& result, double target);

}  // namespace weft::tuning

#endif  // WEFT_TUNING_SEARCH_H_
