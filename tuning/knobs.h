// The tuner's search space: the mlx5 cc_params it moves, each with the bounds it searches
// (inside common/tunable_ranges.h's range) and a scale, and the map between a point of the
// unit cube [0, 1]^d (what the search strategies move in) and a DCQCN profile.
//
// Searched: the parameters the evaluation model (sim/dcqcn_episode.h over sim/cc_params.h)
// responds to. Not searched, left at the firmware defaults because the model does not
// represent them, or only as a bound, and a value chosen for them would be a guess:
// rp_hai_rate (its stage factor is taken as 1), rp_gd, rp_min_rate, rp_max_rate,
// rp_rate_to_set_on_first_cnp; np_cnp_* and the
// enabled priorities are QoS, not tuning (the safety rules keep them).
// rp_min_dec_fac is searched up to 99: 100 means "never cut", congestion control off.
//
// Pure functions; thread-safe.
#ifndef WEFT_TUNING_KNOBS_H_
#define WEFT_TUNING_KNOBS_H_

#include <cstdint>
#include <vector>

#include "proto/weft/v1/desired_state.pb.h"

namespace weft::tuning {

struct Knob {
  const char* name;  // the cc_params name
  uint32_t low;
  uint32_t high;
  bool log_scale;  // searched on log(1 + value): µs and Mb/s that span decades
};

// The searched parameters, in a fixed order (a point's coordinate i is knob i).
const std::vector<Knob>& SearchKnobs();

// The profile at `point` (size SearchKnobs().size(); coordinates clamped to [0, 1], values
// rounded to integers inside each knob's bounds): only the searched fields are set.
// Any point gives a profile inside the ranges: the search cannot step out of them.
weft::v1::DcqcnParams DecodeProfile(const std::vector<double>& point);

// The point of `profile`'s searched fields (unset fields: firmware defaults; values outside
// a knob's bounds clamped to them).
std::vector<double> EncodeProfile(const weft::v1::DcqcnParams& profile);

}  // namespace weft::tuning

#endif  // WEFT_TUNING_KNOBS_H_
