// job_rank: one rank of a test job for tests/job_test. Reads the WEFT_* environment
// (datapath/job.h), joins through the node agent (datapath/agent_job.h: ChoosePath,
// rendezvous through agents and controller), all-reduces data whose sum it can
// compute on its own, and checks every element. Prints one line
//   rank=R ok device=D gid_index=G traffic_class=T transport=K reason="..."
// and exits 0, or prints "rank=R error: ..." and exits 1.
#include <cmath>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "datapath/agent_job.h"
#include "common/status_macros.h"
#include "datapath/job.h"

ABSL_FLAG(int, timeout_ms, 30000, "how long to wait for the other ranks");
ABSL_FLAG(int, elements, 1000003, "float32 elements to all-reduce (not divisible by ranks)");

namespace weft::datapath {
namespace {

// Element i of rank r: small integers, so float sums are exact.
float Value(int rank, int64_t i) { return static_cast<float>((rank + 1) * (i % 97)); }

absl::Status Run() {
  ASSIGN_OR_RETURN(JobOptions options, JobOptions::FromEnvironment());
  options.connect_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_timeout_ms));
  AgentPathChoice path;
  ASSIGN_OR_RETURN(std::unique_ptr<Job> job, JoinThroughAgent(options, nullptr, &path));
  Communicator& comm = job->communicator();

  const int64_t n = absl::GetFlag(FLAGS_elements);
  std::vector<float> data(n);
  for (int64_t i = 0; i < n; ++i) data[i] = Value(options.rank, i);
  RETURN_IF_ERROR(comm.AllReduce(data.data(), data.size(), DataType::kFloat32, ReduceOp::kSum));
  const int64_t rank_sum = int64_t{options.size} * (options.size + 1) / 2;  // sum of rank + 1
  for (int64_t i = 0; i < n; ++i) {
    const float expected = static_cast<float>(rank_sum * (i % 97));
    if (data[i] != expected) {
      return absl::InternalError(absl::StrCat("all-reduce element ", i, " is ", data[i],
                                              ", expected ", expected));
    }
  }
  // And a max over int64, so a second collective runs on the same transport.
  int64_t ranks[3] = {options.rank, -options.rank, 7};
  RETURN_IF_ERROR(comm.AllReduce(ranks, 3, DataType::kInt64, ReduceOp::kMax));
  if (ranks[0] != options.size - 1 || ranks[1] != 0 || ranks[2] != 7) {
    return absl::InternalError(absl::StrCat("max all-reduce gave ", ranks[0], ", ", ranks[1], ", ",
                                            ranks[2]));
  }
  std::cout << "rank=" << options.rank << " ok device=" << path.path.device()
            << " gid_index=" << path.path.gid_index()
            << " traffic_class=" << path.path.traffic_class()
            << " transport=" << TransportKindName(job->transport_choice().kind) << " reason=\""
            << job->transport_choice().reason << "\"" << std::endl;
  return absl::OkStatus();
}

}  // namespace
}  // namespace weft::datapath

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  absl::Status status = weft::datapath::Run();
  if (!status.ok()) {
    const char* rank = std::getenv("WEFT_RANK");
    std::cout << "rank=" << (rank ? rank : "?") << " error: " << status << std::endl;
    return 1;
  }
  return 0;
}
