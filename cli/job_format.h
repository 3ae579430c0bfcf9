// Rendering of the controller's jobs (PlacementService.ListJobs) for `weftctl jobs`: one
// row per job with its reservation, its newest reported iteration and the congestion
// the controller sees on its nodes. Pure functions over protos; thread-safe.
#ifndef WEFT_CLI_JOB_FORMAT_H_
#define WEFT_CLI_JOB_FORMAT_H_

#include <string>
#include <vector>

#include "google/protobuf/repeated_ptr_field.h"
#include "proto/weft/v1/placement.pb.h"

namespace weft {

// One row per job, in the controller's order (oldest reservation first):
//   JOB NODES RACKS ITERS ITER_MS VS_FIRST BUSBW_GB/S TOKENS/S ECN/S CNP/S PAUSE% FINDINGS
// NODES is the count and the nodes ("2 n1,n2"; from four up "8 gpu-a01..gpu-b04", ring
// order); ITER_MS the newest iteration; VS_FIRST its slowdown against the job's first
// ("1.25x"); BUSBW_GB/S the bus bandwidth of the all-reduce phase, else of the phase
// that took longest. The progress columns read "-" until the job reports.
std::string FormatJobsTable(const weft::v1::ListJobsResponse& jobs);

// "2 n1,n2", or "8 gpu-a01..gpu-b04" from four nodes up: a node list that fits a cell.
std::string CompactNodeList(const google::protobuf::RepeatedPtrField<std::string>& nodes);

// ITERS ITER_MS VS_FIRST BUSBW_GB/S TOKENS/S of `progress`; five "-" when null (the
// job has not reported). Shared with the fabric twin's jobs (`weftctl fabric jobs`).
std::vector<std::string> JobProgressCells(const weft::v1::JobProgress* progress);

// The phase whose bandwidth stands for the job: "all-reduce" when reported, else the one
// that took longest; nullptr without phases.
const weft::v1::PhaseProgress* HeadlinePhase(const weft::v1::JobProgress& progress);

}  // namespace weft

#endif  // WEFT_CLI_JOB_FORMAT_H_
