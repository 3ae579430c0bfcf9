#include "tuning/search.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/fake_clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::tuning {
namespace {

using ::testing::HasSubstr;

// A smooth objective with its maximum 0 at a known point away from the start.
double Bowl(const std::vector<double>& x) {
  const double target[] = {0.8, 0.2, 0.65, 0.3, 0.9};
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum -= (x[i] - target[i]) * (x[i] - target[i]);
  return sum;
}

SearchOptions Options(const Clock* clock, uint64_t seed, int evaluations) {
  SearchOptions o;
  o.seed = seed;
  o.max_evaluations = evaluations;
  o.clock = clock;
  o.start = std::vector<double>(5, 0.5);  // Bowl = −0.4525
  return o;
}

using Strategy = absl::StatusOr<SearchResult> (*)(const SearchObjective&, const SearchOptions&);

class SearchTest : public ::testing::TestWithParam<Strategy> {};

TEST_P(SearchTest, ImprovesOnAKnownObjective) {
  FakeClock clock;
  int calls = 0;
  const SearchObjective objective = [&](const std::vector<double>& x) -> absl::StatusOr<double> {
    ++calls;
    return Bowl(x);
  };
  const SearchResult r = GetParam()(objective, Options(&clock, 1, 60)).value();
  EXPECT_DOUBLE_EQ(r.best_so_far.front(), Bowl(std::vector<double>(5, 0.5)));
  // From −0.45 to within 0.03 of the optimum in 60 evaluations.
  EXPECT_GT(r.best_score, -0.03) << r.strategy;
  EXPECT_DOUBLE_EQ(Bowl(r.best_point), r.best_score);
  // Bounded, and the record is the running best.
  EXPECT_EQ(calls, 60);
  EXPECT_EQ(r.evaluations, 60);
  EXPECT_EQ(r.stop, StopReason::kEvaluations);
  ASSERT_EQ(r.best_so_far.size(), 60u);
  for (size_t i = 1; i < r.best_so_far.size(); ++i) EXPECT_GE(r.best_so_far[i], r.best_so_far[i - 1]);
  for (double v : r.best_point) {
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 1);
  }
}

TEST_P(SearchTest, DeterministicForASeed) {
  FakeClock clock;
  const SearchObjective objective = [](const std::vector<double>& x) -> absl::StatusOr<double> {
    return Bowl(x);
  };
  const SearchResult a = GetParam()(objective, Options(&clock, 42, 30)).value();
  const SearchResult b = GetParam()(objective, Options(&clock, 42, 30)).value();
  const SearchResult c = GetParam()(objective, Options(&clock, 43, 30)).value();
  EXPECT_EQ(a.best_so_far, b.best_so_far);
  EXPECT_EQ(a.best_point, b.best_point);
  EXPECT_NE(a.best_so_far, c.best_so_far);
}

TEST_P(SearchTest, StopsAtTheWallTimeBudget) {
  FakeClock clock;
  const SearchObjective slow = [&](const std::vector<double>& x) -> absl::StatusOr<double> {
    clock.Advance(absl::Seconds(1));  // each evaluation takes a second
    return Bowl(x);
  };
  SearchOptions o = Options(&clock, 1, 1000);
  o.max_wall = absl::Milliseconds(5500);
  const SearchResult r = GetParam()(slow, o).value();
  EXPECT_EQ(r.evaluations, 6);  // at 0, 1, ..., 5 s; none started at 6 s
  EXPECT_EQ(r.stop, StopReason::kWallTime);
  EXPECT_EQ(r.wall, absl::Seconds(6));
}

TEST_P(SearchTest, RefusesBadOptionsAndPassesObjectiveErrors) {
  FakeClock clock;
  const SearchObjective ok = [](const std::vector<double>& x) -> absl::StatusOr<double> { return Bowl(x); };
  SearchOptions o = Options(nullptr, 1, 10);
  EXPECT_THAT(std::string(GetParam()(ok, o).status().message()), HasSubstr("clock"));
  o = Options(&clock, 1, 10);
  o.start[2] = 1.5;
  EXPECT_THAT(std::string(GetParam()(ok, o).status().message()), HasSubstr("start[2] = 1.5"));
  o = Options(&clock, 1, 0);
  EXPECT_THAT(std::string(GetParam()(ok, o).status().message()), HasSubstr("max_evaluations = 0"));
  int calls = 0;
  const SearchObjective failing = [&](const std::vector<double>&) -> absl::StatusOr<double> {
    if (++calls == 3) return absl::InvalidArgumentError("model refused the candidate");
    return 0.0;
  };
  const absl::StatusOr<SearchResult> r = GetParam()(failing, Options(&clock, 1, 10));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("model refused"));
  EXPECT_EQ(calls, 3);
}

INSTANTIATE_TEST_SUITE_P(Strategies, SearchTest,
                         ::testing::Values(&SimulatedAnnealing, &SurrogateSearch));

TEST(EvaluationsToReachTest, FindsTheFirstEvaluationAtTheTarget) {
  SearchResult r;
  r.best_so_far = {0, 0.1, 0.1, 0.4, 0.5};
  EXPECT_EQ(EvaluationsToReach(r, 0.1), 2);
  EXPECT_EQ(EvaluationsToReach(r, 0.45), 5);
  EXPECT_EQ(EvaluationsToReach(r, 0.6), -1);
}

}  // namespace
}  // namespace weft::tuning
