#include "tuning/search.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tuning/rng.h"

namespace weft::tuning {
namespace {

absl::Status Validate(const SearchOptions& o) {
  if (o.clock == nullptr) return absl::InvalidArgumentError("clock is null: the wall-time bound needs one");
  if (o.start.empty()) return absl::InvalidArgumentError("start is empty: accepted a point of [0, 1]^d, d ≥ 1");
  for (size_t i = 0; i < o.start.size(); ++i) {
    if (!(o.start[i] >= 0 && o.start[i] <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("start[", i, "] = ", o.start[i], " is out of range: accepted [0, 1]"));
    }
  }
  if (o.max_evaluations < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_evaluations = ", o.max_evaluations,
                                                   " is out of range: accepted [1, inf)"));
  }
  return absl::OkStatus();
}

// Evaluates within the budget and keeps the best; Evaluate returns false once the budget
// is spent (nothing evaluated then).
class Budget {
 public:
  Budget(std::string strategy, const SearchObjective& objective, const SearchOptions& options)
      : objective_(objective), options_(options), started_(options.clock->Now()) {
    result_.strategy = std::move(strategy);
    result_.best_score = -INFINITY;
  }

  bool Spent() {
    if (result_.evaluations >= options_.max_evaluations) {
      result_.stop = StopReason::kEvaluations;
      return true;
    }
    if (options_.clock->Now() - started_ >= options_.max_wall) {
      result_.stop = StopReason::kWallTime;
      return true;
    }
    return false;
  }

  // The score of `point`; sets *spent when the budget allowed no evaluation.
  absl::StatusOr<double> Evaluate(const std::vector<double>& point, bool* spent) {
    *spent = Spent();
    if (*spent) return -INFINITY;
    absl::StatusOr<double> score = objective_(point);
    if (!score.ok()) return score.status();
    ++result_.evaluations;
    if (*score > result_.best_score) {
      result_.best_score = *score;
      result_.best_point = point;
    }
    result_.best_so_far.push_back(result_.best_score);
    return score;
  }

  double best() const { return result_.best_score; }
  const std::vector<double>& best_point() const { return result_.best_point; }

  SearchResult Finish() {
    result_.wall = options_.clock->Now() - started_;
    return std::move(result_);
  }

 private:
  const SearchObjective& objective_;
  const SearchOptions& options_;
  absl::Time started_;
  SearchResult result_;
};

double Reflect(double x) {
  x = std::fmod(std::abs(x), 2.0);
  return x > 1 ? 2 - x : x;
}

// A Gaussian process over the points so far: posterior mean and sd at x.
class Surrogate {
 public:
  Surrogate(const std::vector<std::vector<double>>& xs, const std::vector<double>& ys,
            double length_scale, double noise)
      : xs_(xs), length_sq_(length_scale * length_scale) {
    const size_t n = xs.size();
    double mean = 0, sq = 0;
    for (double y : ys) mean += y, sq += y * y;
    mean_ = mean / n;
    scale_ = std::sqrt(std::max(sq / n - mean_ * mean_, 1e-12));
    // Cholesky of K + noise·I (row-major lower triangle).
    chol_.assign(n * n, 0);
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j <= i; ++j) {
        double sum = Kernel(xs[i], xs[j]) + (i == j ? noise : 0);
        for (size_t k = 0; k < j; ++k) sum -= chol_[i * n + k] * chol_[j * n + k];
        chol_[i * n + j] = i == j ? std::sqrt(std::max(sum, 1e-12)) : sum / chol_[j * n + j];
      }
    }
    alpha_.resize(n);
    for (size_t i = 0; i < n; ++i) alpha_[i] = (ys[i] - mean_) / scale_;
    Solve(&alpha_, false);
    Solve(&alpha_, true);
  }

  // Posterior mean and standard deviation of the score at x.
  std::pair<double, double> Predict(const std::vector<double>& x) const {
    const size_t n = xs_.size();
    std::vector<double> k(n);
    double mu = 0;
    for (size_t i = 0; i < n; ++i) {
      k[i] = Kernel(x, xs_[i]);
      mu += k[i] * alpha_[i];
    }
    Solve(&k, false);
    double var = 1;
    for (double v : k) var -= v * v;
    return {mean_ + scale_ * mu, scale_ * std::sqrt(std::max(var, 1e-12))};
  }

 private:
  double Kernel(const std::vector<double>& a, const std::vector<double>& b) const {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]);
    return std::exp(-d / (2 * length_sq_));
  }
  // L·y = v (forward) or Lᵀ·y = v (backward), in place.
  void Solve(std::vector<double>* v, bool transpose) const {
    const size_t n = xs_.size();
    std::vector<double>& x = *v;
    if (!transpose) {
      for (size_t i = 0; i < n; ++i) {
        for (size_t k = 0; k < i; ++k) x[i] -= chol_[i * n + k] * x[k];
        x[i] /= chol_[i * n + i];
      }
    } else {
      for (size_t i = n; i-- > 0;) {
        for (size_t k = i + 1; k < n; ++k) x[i] -= chol_[k * n + i] * x[k];
        x[i] /= chol_[i * n + i];
      }
    }
  }

  const std::vector<std::vector<double>>& xs_;
  double length_sq_;
  double mean_ = 0, scale_ = 1;
  std::vector<double> chol_, alpha_;
};

double ExpectedImprovement(double mu, double sd, double best, double xi) {
  const double z = (mu - best - xi) / sd;
  const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
  const double pdf = std::exp(-0.5 * z * z) / std::sqrt(2 * M_PI);
  return (mu - best - xi) * cdf + sd * pdf;
}

}  // namespace

absl::StatusOr<SearchResult> SimulatedAnnealing(const SearchObjective& objective,
                                                const SearchOptions& options) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  Budget budget("simulated annealing", objective, options);
  Rng rng(options.seed);
  const size_t d = options.start.size();
  constexpr double kT0 = 0.05, kT1 = 0.0005;
  bool spent = false;
  std::vector<double> current = options.start;
  absl::StatusOr<double> current_score = budget.Evaluate(current, &spent);
  if (!current_score.ok()) return current_score.status();
  int since_best = 0;
  for (int step = 1; !spent; ++step) {
    const double progress = std::min(1.0, static_cast<double>(step) / options.max_evaluations);
    const double temperature = kT0 * std::pow(kT1 / kT0, progress);
    const double sigma = 0.03 + 0.22 * std::sqrt(temperature / kT0);
    std::vector<double> next = current;
    bool moved = false;
    while (!moved) {
      for (size_t i = 0; i < d; ++i) {
        if (rng.Uniform() < 0.5) {
          next[i] = Reflect(next[i] + sigma * rng.Normal());
          moved = true;
        }
      }
    }
    absl::StatusOr<double> score = budget.Evaluate(next, &spent);
    if (!score.ok()) return score.status();
    if (spent) break;
    if (*score > *current_score || rng.Uniform() < std::exp((*score - *current_score) / temperature)) {
      current = next;
      current_score = *score;
    }
    since_best = *score >= budget.best() ? 0 : since_best + 1;
    if (since_best >= 20) {
      current = budget.best_point();
      current_score = budget.best();
      since_best = 0;
    }
  }
  return budget.Finish();
}

absl::StatusOr<SearchResult> SurrogateSearch(const SearchObjective& objective,
                                             const SearchOptions& options) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  Budget budget("surrogate (GP, expected improvement)", objective, options);
  Rng rng(options.seed);
  const size_t d = options.start.size();
  std::vector<std::vector<double>> xs;
  std::vector<double> ys;
  bool spent = false;
  auto evaluate = [&](const std::vector<double>& x) -> absl::Status {
    absl::StatusOr<double> y = budget.Evaluate(x, &spent);
    if (!y.ok()) return y.status();
    if (!spent) {
      xs.push_back(x);
      ys.push_back(*y);
    }
    return absl::OkStatus();
  };
  if (absl::Status s = evaluate(options.start); !s.ok()) return s;
  const size_t initial = std::max<size_t>(2, 2 * d);
  while (!spent && xs.size() < initial) {
    std::vector<double> x(d);
    for (double& v : x) v = rng.Uniform();
    if (absl::Status s = evaluate(x); !s.ok()) return s;
  }
  const double length_scale = 0.25 * std::sqrt(static_cast<double>(d));
  while (!spent && !budget.Spent()) {
    const Surrogate gp(xs, ys, length_scale, 1e-3);
    // Candidates: uniform, and Gaussian steps around the five best points so far.
    std::vector<size_t> order(xs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ys[a] > ys[b]; });
    const double best = ys[order[0]];
    std::vector<double> chosen;
    double chosen_ei = -1;
    for (int c = 0; c < 1024; ++c) {
      std::vector<double> x(d);
      if (c < 512) {
        for (double& v : x) v = rng.Uniform();
      } else {
        const std::vector<double>& around = xs[order[c % std::min<size_t>(5, order.size())]];
        const double sigma = c % 2 == 0 ? 0.05 : 0.15;
        for (size_t i = 0; i < d; ++i) x[i] = Reflect(around[i] + sigma * rng.Normal());
      }
      const auto [mu, sd] = gp.Predict(x);
      const double ei = ExpectedImprovement(mu, sd, best, 1e-3);
      if (ei > chosen_ei) {
        chosen_ei = ei;
        chosen = std::move(x);
      }
    }
    if (absl::Status s = evaluate(chosen); !s.ok()) return s;
  }
  return budget.Finish();
}

int EvaluationsToReach(const SearchResult& result, double target) {
  for (size_t i = 0; i < result.best_so_far.size(); ++i) {
    if (result.best_so_far[i] >= target) return static_cast<int>(i) + 1;
  }
  return -1;
}

}  // namespace weft::tuning
