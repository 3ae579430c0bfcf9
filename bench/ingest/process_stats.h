// What the ingest benchmark measures from outside a process: CPU time and resident
// memory from /proc/<pid>, and counters from a Prometheus /metrics endpoint over plain
// HTTP/1.0 (the controller's civetweb exposer). The parsers are pure and tested on
// fixed text; the readers do one blocking read each (a few hundred microseconds), meant
// for the benchmark's measuring thread, never a gRPC callback.
//
// Thread-safe: no shared state.
#ifndef WEFT_BENCH_INGEST_PROCESS_STATS_H_
#define WEFT_BENCH_INGEST_PROCESS_STATS_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::bench {

// utime + stime in seconds from the text of /proc/<pid>/stat (the comm field may hold
// spaces and parentheses; fields are counted from the last ')'). `ticks_per_second` is
// sysconf(_SC_CLK_TCK). INVALID_ARGUMENT when the text is not a stat line.
absl::StatusOr<double> ParseProcStatCpuSeconds(absl::string_view stat, long ticks_per_second);

// VmRSS in KiB from the text of /proc/<pid>/status. NOT_FOUND when the line is missing
// (a zombie).
absl::StatusOr<long> ParseVmRssKib(absl::string_view status);

// utime + stime + cutime + cstime (the process and its reaped children) in seconds,
// from the text of /proc/<pid>/stat. INVALID_ARGUMENT as above.
absl::StatusOr<double> ParseProcStatTreeCpuSeconds(absl::string_view stat,
                                                   long ticks_per_second);

// CPU seconds of every process on the machine: the sum of ParseProcStatTreeCpuSeconds
// over /proc/<pid>/stat, so that processes that exited (compiler runs of other builds)
// count through the parents that reaped them. Per-process times are exact, where
// /proc/stat's per-CPU times are sampled at ticks and miss short bursts of work.
double MachineCpuSeconds();

// The same, read from /proc/<pid>/...; NOT_FOUND when the process is gone.
absl::StatusOr<double> ProcessCpuSeconds(int pid);
absl::StatusOr<long> ProcessRssKib(int pid);

// Prometheus text exposition -> metric name -> sum over all its series (labels
// dropped). Comment lines and unparsable values are skipped.
//
// Example: "x_total{reason=\"a\"} 2\nx_total{reason=\"b\"} 3\n" gives {"x_total": 5}.
std::map<std::string, double> SumSeriesByName(absl::string_view exposition);

// GET http://<host:port>/metrics, body only. UNAVAILABLE when it cannot connect, read
// or the status is not 200.
absl::StatusOr<std::string> FetchMetrics(const std::string& host_port);

}  // namespace weft::bench

#endif  // WEFT_BENCH_INGEST_PROCESS_STATS_H_
