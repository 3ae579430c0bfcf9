// PathResolver: which links a probe stream crosses. A stream's UDP source port pins it
// to one ECMP path each way; the controller resolves it from the topology (and, where
// available, a traceroute with the same 5-tuple), the fabric twin from its ECMP hash.
// The localiser only ever sees link ids and what this says about them.
#ifndef WEFT_PINGMESH_PATH_RESOLVER_H_
#define WEFT_PINGMESH_PATH_RESOLVER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pingmesh/probe.h"

namespace weft::pingmesh {

// A directed link between two devices: a NIC ("gpu-a01/mlx5_0") or a switch ("tor-a").
struct LinkInfo {
  std::string name;  // "gpu-a01/mlx5_0->tor-a"
  std::string from;
  std::string to;
  bool from_switch = false;
  bool to_switch = false;
};

// The directed links of a probe (forward: source NIC's cable first, destination NIC's
// last) and of its answer (back: from the destination NIC to the source NIC).
struct ProbePath {
  std::vector<int> forward;
  std::vector<int> back;
};

class PathResolver {
 public:
  virtual ~PathResolver() = default;
  // NotFound when a NIC of the key is unknown or no path joins them; InvalidArgument for
  // a stream from a NIC to itself.
  virtual absl::StatusOr<ProbePath> Resolve(const ProbeKey& key) = 0;
  // What link `id` (one Resolve returned) joins. Stable for the resolver's lifetime.
  virtual const LinkInfo& Link(int id) const = 0;
};

}  // namespace weft::pingmesh

#endif  // WEFT_PINGMESH_PATH_RESOLVER_H_
