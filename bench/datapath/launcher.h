// Process helpers for weft-perf: run one benchmark rank per child process (fork, so
// every library gets separate address spaces as MPI does), and run an external
// command (mpirun) capturing its standard output. Both enforce a timeout and kill
// only the processes they started.
//
// Call from a single-threaded process (fork).
#ifndef WEFT_BENCH_DATAPATH_LAUNCHER_H_
#define WEFT_BENCH_DATAPATH_LAUNCHER_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace weft::bench {

// Forks `ranks` children; child r runs body(r, result_fd) and exits with its return
// value. Returns everything rank 0 wrote to result_fd. Fails naming the ranks that
// exited non-zero or were killed, or when they run past `timeout`.
absl::StatusOr<std::string> RunRankProcesses(
    int ranks, const std::function<int(int rank, int result_fd)>& body, absl::Duration timeout);

// Runs argv[0] (searched in PATH) with stdout captured; stderr passes through.
absl::StatusOr<std::string> RunCommand(const std::vector<std::string>& argv,
                                       absl::Duration timeout);

}  // namespace weft::bench

#endif  // WEFT_BENCH_DATAPATH_LAUNCHER_H_
