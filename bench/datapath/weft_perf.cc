// weft-perf: all-reduce, all-to-all, all-gather and reduce-scatter latency and bus
// bandwidth of libweft
// next to Gloo and Open MPI, in one run, on one machine. Every rank is a process: Weft's and
// Gloo's are forked here (bench/datapath/launcher.h), Open MPI's are started by
// mpirun running weft_perf_mpi. All three run the same sweep (sweep.h, timing.h).
// Writes a markdown section to stdout and, with --out, to a file; --raw_out keeps every
// pass's measurements (time and CPU per operation) for analysis, and --merge_raw pools
// the passes of several such files (runs of the same build) into one report.
//
//   bazel run -c opt //bench/datapath:weft-perf -- --out=/tmp/datapath.md
//   weft-perf --merge_raw=/tmp/run1.raw,/tmp/run2.raw
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/datapath/gloo_library.h"
#include "bench/datapath/launcher.h"
#include "bench/datapath/perf_report.h"
#include "bench/datapath/sweep.h"
#include "bench/datapath/timing.h"
#include "bench/datapath/weft_library.h"
#include "common/file.h"
#include "common/logging.h"
#include "datapath/rendezvous/tcp_rendezvous.h"
#include "datapath/transport/socket_util.h"
#include "datapath/transport/transport_factory.h"
#include "rdma/verbs_ibv.h"

ABSL_FLAG(std::string, out, "", "Also write the markdown section to this file.");
ABSL_FLAG(std::string, raw_out, "",
          "Also write every pass's measurements to this file, one line each (library, "
          "collective, ranks, bytes, time_us, iterations, cpu_us), each pass after a line "
          "'# pass N'.");
ABSL_FLAG(std::string, ranks, "2,4,8", "Rank counts to run.");
ABSL_FLAG(std::string, libraries, "weft,gloo,mpi", "Libraries to run (weft, gloo, mpi).");
ABSL_FLAG(uint64_t, max_bytes, 256u << 20, "Largest size in bytes.");
ABSL_FLAG(uint64_t, max_bytes_at_8_ranks, 256u << 20,
          "Largest size with 8 or more ranks (lower it to shorten a run where they share "
          "few cores).");
ABSL_FLAG(uint64_t, min_bytes, 8, "Smallest size in bytes.");
ABSL_FLAG(std::string, collectives, "all-reduce,all-to-all,all-gather,reduce-scatter",
          "Collectives to run (all-reduce, all-to-all, all-gather, reduce-scatter).");
ABSL_FLAG(int, weft_socket_buffer_bytes, 0, "Weft TCP SO_SNDBUF/SO_RCVBUF (0: autotuning).");
ABSL_FLAG(uint64_t, weft_segment_bytes, 0, "Weft ring segment size (0: the default).");
ABSL_FLAG(int, weft_spin_us, -1, "Weft TCP spin before blocking, µs (-1: the default).");
ABSL_FLAG(int64_t, weft_oversubscribed_spin_max_bytes, -1,
          "Weft TCP: with more ranks than cores, spin only while waiting on messages up to "
          "this size (-1: the default).");
ABSL_FLAG(int64_t, weft_clear_to_send_bytes, -1,
          "Weft TCP: messages from this size wait for the receiver's clear-to-send (0: all "
          "eager; -1: the default).");
ABSL_FLAG(int, weft_ring_window, 0, "Weft all-reduce ring window (0: the default).");
ABSL_FLAG(int64_t, weft_small_allreduce_bytes, -1,
          "Weft all-reduce: recursive doubling up to this size, ring above (-1: the default).");
ABSL_FLAG(int64_t, weft_direct_allreduce_bytes, -1,
          "Weft all-reduce, more than two ranks: two everyone-to-everyone rounds up to this "
          "size, ring above (-1: the default).");
ABSL_FLAG(int64_t, weft_halving_allreduce_bytes, -1,
          "Weft all-reduce, 4, 8, 16... ranks: recursive halving and doubling up to this "
          "size, two rounds or ring above (-1: the default).");
ABSL_FLAG(int64_t, weft_small_allgather_bytes, -1,
          "Weft all-gather: everyone-to-everyone up to this many output bytes (-1: the "
          "default).");
ABSL_FLAG(int64_t, weft_small_reduce_scatter_bytes, -1,
          "Weft reduce-scatter: everyone-to-everyone up to this many input bytes (-1: the "
          "default).");
ABSL_FLAG(int64_t, weft_alltoall_bytes_in_flight, -1,
          "Weft all-to-all bytes sent (and received) by the rounds in flight (-1: the default).");
ABSL_FLAG(double, budget_seconds, 0.15, "Timed seconds per size and library.");
ABSL_FLAG(int, max_iterations, 1000, "Most timed runs per size.");
ABSL_FLAG(int, batches, 1,
          "Batches the timed runs of a size are split into; a size's time is its best "
          "batch's mean. 1: the mean over every timed run, as nccl-tests report.");
ABSL_FLAG(int, min_iterations, 3,
          "Fewest timed runs per size, even past the budget (large sizes need a few for TCP "
          "autotuning and page faults to settle).");
ABSL_FLAG(bool, boost_priority, true,
          "Raise this run's scheduling priority (its autogroup to nice -20, itself to -15; "
          "needs root) so other jobs on a shared machine do not take turns with the ranks.");
ABSL_FLAG(int, repeats, 5, "Passes over every library (the libraries take turns).");
ABSL_FLAG(std::string, aggregate, "median",
          "How the passes make one figure: median (each figure is the median pass's) or best "
          "(the fastest pass's). The report also gives the target check by the other one.");
ABSL_FLAG(std::string, transport, "auto", "Weft's transport: auto, rc or tcp.");
ABSL_FLAG(std::string, mpirun, "mpirun", "The mpirun to start Open MPI ranks with.");
ABSL_FLAG(std::string, mpi_worker, "", "weft_perf_mpi binary (default: next to this binary).");
ABSL_FLAG(int, run_timeout_seconds, 900, "Kill a library's ranks after this long.");
ABSL_FLAG(std::string, merge_raw, "",
          "Run nothing: pool the passes recorded in these --raw_out files (comma-separated; "
          "runs of the same build on the same machine) and report over all of them, as a "
          "run of that many passes would.");

namespace weft::bench {
namespace {

using datapath::TransportKind;

// Turns on in `config` the collectives named in `list` ("all-reduce,all-gather"), and
// only those; an unknown name is INVALID_ARGUMENT.
absl::Status SelectCollectives(const std::string& list, SweepConfig& config) {
  bool* enabled[] = {&config.all_reduce, &config.all_to_all, &config.all_gather,
                     &config.reduce_scatter};  // in kAllCollectives' order
  for (bool* flag : enabled) *flag = false;
  for (absl::string_view name : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    Collective collective;
    if (!ParseCollective(name, &collective)) {
      std::vector<std::string> known;
      for (Collective c : kAllCollectives) known.push_back(CollectiveName(c));
      return absl::InvalidArgumentError(absl::StrCat("bad --collectives entry '", name,
                                                     "' (known: ", absl::StrJoin(known, ", "),
                                                     ")"));
    }
    *enabled[static_cast<int>(collective)] = true;
  }
  return absl::OkStatus();
}

SweepConfig BaseConfig(int ranks) {
  SweepConfig config;
  config.ranks = ranks;
  const uint64_t cap = ranks >= 8 ? std::min(absl::GetFlag(FLAGS_max_bytes),
                                             absl::GetFlag(FLAGS_max_bytes_at_8_ranks))
                                  : absl::GetFlag(FLAGS_max_bytes);
  for (size_t size : SweepSizes(cap)) {
    if (size >= absl::GetFlag(FLAGS_min_bytes)) config.sizes.push_back(size);
  }
  (void)SelectCollectives(absl::GetFlag(FLAGS_collectives), config);  // Main checked it
  config.policy.budget_seconds = absl::GetFlag(FLAGS_budget_seconds);
  config.policy.max_iterations = absl::GetFlag(FLAGS_max_iterations);
  config.policy.min_iterations = absl::GetFlag(FLAGS_min_iterations);
  config.policy.batches = absl::GetFlag(FLAGS_batches);
  return config;
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// One Weft rank (a child process). Rank 0 hosts the rendezvous store on the socket the
// parent bound before forking.
int WeftRank(int rank, SweepConfig config, int listen_fd, int port, TransportKind kind,
             const std::string& label, int result_fd) {
  SetMinLogLevel(rank == 0 ? LogLevel::kInfo : LogLevel::kWarning);
  config.rank = rank;
  std::unique_ptr<datapath::TcpRendezvousServer> server;
  if (rank == 0) {
    auto started = datapath::TcpRendezvousServer::StartOnSocket(datapath::ScopedFd(listen_fd));
    if (!started.ok()) {
      std::fprintf(stderr, "rendezvous server: %s\n", started.status().ToString().c_str());
      return 1;
    }
    server = std::move(*started);
  } else {
    ::close(listen_fd);
  }
  auto rendezvous = datapath::TcpRendezvousClient::Connect({"127.0.0.1", port}, absl::Seconds(60));
  if (!rendezvous.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, rendezvous.status().ToString().c_str());
    return 1;
  }
  rdma::IbvVerbs verbs;
  datapath::TransportRequest request;
  request.rank = rank;
  request.size = config.ranks;
  request.kind = kind;
  request.scope = "weft-perf";
  request.tcp.socket_buffer_bytes = absl::GetFlag(FLAGS_weft_socket_buffer_bytes);
  if (absl::GetFlag(FLAGS_weft_clear_to_send_bytes) >= 0) {
    request.tcp.clear_to_send_bytes =
        static_cast<size_t>(absl::GetFlag(FLAGS_weft_clear_to_send_bytes));
  }
  if (absl::GetFlag(FLAGS_weft_oversubscribed_spin_max_bytes) >= 0) {
    request.tcp.oversubscribed_spin_max_bytes =
        static_cast<size_t>(absl::GetFlag(FLAGS_weft_oversubscribed_spin_max_bytes));
  }
  if (absl::GetFlag(FLAGS_weft_spin_us) >= 0) {
    request.tcp.spin_before_block = absl::Microseconds(absl::GetFlag(FLAGS_weft_spin_us));
  }
  datapath::CommunicatorOptions options;
  if (absl::GetFlag(FLAGS_weft_segment_bytes) > 0) {
    options.segment_bytes = absl::GetFlag(FLAGS_weft_segment_bytes);
  }
  // -1 keeps the default.
  auto set_bytes = [](const absl::Flag<int64_t>& flag, size_t& option) {
    if (absl::GetFlag(flag) >= 0) option = static_cast<size_t>(absl::GetFlag(flag));
  };
  set_bytes(FLAGS_weft_small_allreduce_bytes, options.small_allreduce_bytes);
  set_bytes(FLAGS_weft_direct_allreduce_bytes, options.direct_allreduce_bytes);
  set_bytes(FLAGS_weft_halving_allreduce_bytes, options.halving_allreduce_bytes);
  set_bytes(FLAGS_weft_small_allgather_bytes, options.small_allgather_bytes);
  set_bytes(FLAGS_weft_small_reduce_scatter_bytes, options.small_reduce_scatter_bytes);
  set_bytes(FLAGS_weft_alltoall_bytes_in_flight, options.alltoall_bytes_in_flight);
  if (absl::GetFlag(FLAGS_weft_ring_window) > 0) {
    options.ring_window = absl::GetFlag(FLAGS_weft_ring_window);
  }
  datapath::TransportChoice choice;
  auto comm = datapath::CreateCommunicator(verbs, **rendezvous, request, options, &choice);
  if (!comm.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().ToString().c_str());
    return 1;
  }
  WeftLibrary library(**comm);
  auto measurements = RunSweep(config, label, library);
  if (!measurements.ok()) {
    std::fprintf(stderr, "rank %d: %s\n", rank, measurements.status().ToString().c_str());
    return 1;
  }
  if (rank == 0) {
    // Which algorithms the thresholds chose over the whole sweep (every rank runs the
    // same ones), so an A/B of a threshold shows what it moved.
    std::vector<std::string> ran;
    for (const auto& [algorithm, times] : (*comm)->AlgorithmsRun()) {
      ran.push_back(absl::StrCat(algorithm, " ", times));
    }
    std::fprintf(stderr, "weft-perf: %s, %d ranks ran: %s\n", label.c_str(), (*comm)->size(),
                 absl::StrJoin(ran, ", ").c_str());
    std::string text = absl::StrCat("# transport=", datapath::TransportKindName(choice.kind),
                                    " reason=", choice.reason, "\n");
    for (const Measurement& m : *measurements) text += SerializeMeasurement(m);
    WriteAll(result_fd, text);
  }
  return 0;
}

int GlooRank(int rank, SweepConfig config, const std::string& store_dir, int result_fd) {
  config.rank = rank;
  auto library =
      GlooLibrary::Connect(rank, config.ranks, store_dir, "127.0.0.1", absl::Seconds(600));
  if (!library.ok()) {
    std::fprintf(stderr, "gloo rank %d: %s\n", rank, library.status().ToString().c_str());
    return 1;
  }
  auto measurements = RunSweep(config, "gloo", **library);
  if (!measurements.ok()) {
    std::fprintf(stderr, "gloo rank %d: %s\n", rank, measurements.status().ToString().c_str());
    return 1;
  }
  if (rank == 0) {
    std::string text;
    for (const Measurement& m : *measurements) text += SerializeMeasurement(m);
    WriteAll(result_fd, text);
  }
  return 0;
}

absl::StatusOr<std::string> RunWeft(int ranks, TransportKind kind, const std::string& label) {
  auto listener = datapath::ListenTcp("127.0.0.1", 0, 1024);
  if (!listener.ok()) return listener.status();
  auto port = datapath::LocalPort(listener->get());
  if (!port.ok()) return port.status();
  const int listen_fd = listener->Release();
  const SweepConfig config = BaseConfig(ranks);
  auto out = RunRankProcesses(
      ranks,
      [&](int rank, int result_fd) {
        return WeftRank(rank, config, listen_fd, *port, kind, label, result_fd);
      },
      absl::Seconds(absl::GetFlag(FLAGS_run_timeout_seconds)));
  ::close(listen_fd);
  return out;
}

absl::StatusOr<std::string> RunGloo(int ranks) {
  char dir[] = "/tmp/weft-perf-gloo-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return absl::InternalError("mkdtemp failed");
  const std::string store_dir = dir;
  SweepConfig config = BaseConfig(ranks);
  config.reduce_scatter = false;  // Gloo has none to offer (GlooLibrary::ReduceScatterSum)
  auto out = RunRankProcesses(
      ranks, [&](int rank, int result_fd) { return GlooRank(rank, config, store_dir, result_fd); },
      absl::Seconds(absl::GetFlag(FLAGS_run_timeout_seconds)));
  (void)RunCommand({"rm", "-rf", store_dir}, absl::Seconds(30));
  return out;
}

std::string MpiWorkerPath() {
  if (!absl::GetFlag(FLAGS_mpi_worker).empty()) return absl::GetFlag(FLAGS_mpi_worker);
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string path = n > 0 ? std::string(self, n) : std::string("weft-perf");
  return path.substr(0, path.rfind('/') + 1) + "weft_perf_mpi";
}

std::vector<std::string> MpirunPrefix(int ranks) {
  return {absl::GetFlag(FLAGS_mpirun),
          "--allow-run-as-root",
          "--oversubscribe",
          "--bind-to",
          "none",
          "--mca",
          "btl",
          "tcp,self",
          "--mca",
          "btl_tcp_if_include",
          "lo",
          "-np",
          absl::StrCat(ranks)};
}

absl::StatusOr<std::string> RunMpi(int ranks) {
  const SweepConfig config = BaseConfig(ranks);
  std::vector<std::string> argv = MpirunPrefix(ranks);
  std::vector<std::string> sizes;
  for (size_t s : config.sizes) sizes.push_back(absl::StrCat(s));
  argv.push_back(MpiWorkerPath());
  argv.push_back(absl::StrCat("--sizes=", absl::StrJoin(sizes, ",")));
  argv.push_back(absl::StrCat("--budget_seconds=", config.policy.budget_seconds));
  argv.push_back(absl::StrCat("--max_iterations=", config.policy.max_iterations));
  argv.push_back(absl::StrCat("--min_iterations=", config.policy.min_iterations));
  argv.push_back(absl::StrCat("--batches=", config.policy.batches));
  argv.push_back(absl::StrCat("--all_reduce=", config.all_reduce ? "true" : "false"));
  argv.push_back(absl::StrCat("--all_to_all=", config.all_to_all ? "true" : "false"));
  argv.push_back(absl::StrCat("--all_gather=", config.all_gather ? "true" : "false"));
  argv.push_back(absl::StrCat("--reduce_scatter=", config.reduce_scatter ? "true" : "false"));
  return RunCommand(argv, absl::Seconds(absl::GetFlag(FLAGS_run_timeout_seconds)));
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// "transport=tcp reason=..." (rank 0's note) -> "TCP transport, picked because: ...".
std::string DescribeWeftTransport(const std::string& note) {
  const size_t kind_at = note.find("transport=");
  const size_t reason_at = note.find(" reason=");
  if (kind_at == std::string::npos || reason_at == std::string::npos) {
    return "transport not reported";
  }
  std::string kind = note.substr(kind_at + 10, reason_at - kind_at - 10);
  for (char& c : kind) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return absl::StrCat(kind,
                      " transport, picked by its factory because: ", note.substr(reason_at + 8));
}

// ", at nice -20 (...)" when not run at nice 0.
std::string Machine() {
  utsname u;
  ::uname(&u);
  std::string cpu = "unknown CPU";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGE_SIZE);
  return absl::StrFormat("%s, %d cores (%s), %.0f GiB RAM, Linux %s", u.nodename,
                         ::sysconf(_SC_NPROCESSORS_ONLN), cpu,
                         static_cast<double>(pages) * page_size / (1 << 30), u.release);
}

// Under the kernel's autogroup scheduling, nice only orders processes within one session:
// a compiler in another session still gets an equal share of the cores against all of
// this run's ranks together. Raising the autogroup's nice as well makes the ranks (which
// inherit both) take precedence over unrelated jobs. Returns what it did, for the report.
std::string BoostPriority() {
  if (!absl::GetFlag(FLAGS_boost_priority)) return "not raised (--boost_priority=false)";
  std::string done;
  {
    std::ofstream autogroup("/proc/self/autogroup");
    if (autogroup && (autogroup << "-20").flush()) done = "autogroup nice -20";
  }
  if (::setpriority(PRIO_PROCESS, 0, -15) == 0) {
    done = done.empty() ? "nice -15" : absl::StrCat(done, ", nice -15");
  }
  return done.empty() ? absl::StrCat("not raised (", std::strerror(errno), ")")
                      : absl::StrCat("raised for every rank: ", done);
}

std::string LibraryLabel(const std::string& column) {
  if (column == "weft") return "Weft";
  if (column == "weft-rc") return "Weft RC";
  if (column == "weft-tcp") return "Weft TCP";
  if (column == "gloo") return "Gloo";
  if (column == "mpi") return "MPI";
  return column;
}

// The tables with each figure the `aggregate` ("median" or "best") of `passes`, Weft's
// CPU against each baseline, where Weft misses a target against Gloo (with every pass's
// ratio), and the target check by the other aggregate.
std::string RenderReport(const ReportText& text,
                         const std::vector<std::vector<Measurement>>& passes,
                         const std::string& aggregate) {
  std::vector<Measurement> best;
  for (const auto& pass : passes) KeepBest(best, pass);
  const std::vector<Measurement> median = MedianOfPasses(passes);
  const std::vector<Measurement>& measurements = aggregate == "median" ? median : best;
  std::string markdown = RenderMarkdown(text, measurements);
  std::string cpu;
  for (size_t i = 1; i < text.libraries.size(); ++i) {
    if (absl::StartsWith(text.libraries[i], "weft")) continue;  // Weft over TCP beside RC
    cpu += RenderCpuComparison(text, measurements, text.libraries[i], kBandwidthTargetFromBytes);
  }
  if (!cpu.empty()) absl::StrAppend(&markdown, "\n", cpu);
  if (const std::string shortfalls =
          RenderShortfalls(text, measurements, passes, "gloo", kBandwidthTargetFromBytes,
                           kLatencyTargetUpToBytes);
      !shortfalls.empty()) {
    absl::StrAppend(&markdown,
                    "\nWhere Weft misses a target against Gloo, and its ratio in each pass:\n\n",
                    shortfalls);
  }
  if (passes.size() > 1) {
    absl::StrAppend(&markdown, "\nThe same check with each figure the ",
                    aggregate == "median" ? "best" : "median", " of the ", passes.size(),
                    " passes instead:\n\n",
                    RenderTargetLines(text, aggregate == "median" ? best : median));
  }
  return markdown;
}

// Prints the report and writes --out and --raw_out; the exit status.
int WriteReport(const std::string& markdown,
                const std::vector<std::vector<Measurement>>& passes) {
  std::fputs(markdown.c_str(), stdout);
  if (!absl::GetFlag(FLAGS_raw_out).empty()) {
    std::ofstream raw(absl::GetFlag(FLAGS_raw_out));
    raw << SerializePasses(passes);
    if (!raw) {
      std::fprintf(stderr, "cannot write %s\n", absl::GetFlag(FLAGS_raw_out).c_str());
      return 1;
    }
  }
  if (!absl::GetFlag(FLAGS_out).empty()) {
    std::ofstream file(absl::GetFlag(FLAGS_out));
    file << markdown;
    if (!file) {
      std::fprintf(stderr, "cannot write %s\n", absl::GetFlag(FLAGS_out).c_str());
      return 1;
    }
  }
  return 0;
}

// --merge_raw: one report over the passes of several earlier runs. On a shared machine
// five passes leave a median a few percent of noise; pooling runs of the same build
// narrows it without a longer run.
int MergeRaw(const std::string& files, const std::string& aggregate) {
  std::vector<std::vector<Measurement>> passes;
  std::vector<std::string> sources;
  for (absl::string_view file : absl::StrSplit(files, ',', absl::SkipEmpty())) {
    const std::string path(file);
    const absl::StatusOr<std::string> contents = ReadWholeFile(path, "raw file");
    if (!contents.ok()) {
      std::fprintf(stderr, "weft-perf: %s\n", std::string(contents.status().message()).c_str());
      return 2;
    }
    absl::StatusOr<std::vector<std::vector<Measurement>>> parsed = ParsePasses(*contents);
    if (parsed.ok() && parsed->empty()) {
      parsed = absl::InvalidArgumentError("no '# pass' line: not a weft-perf --raw_out file");
    }
    if (!parsed.ok()) {
      std::fprintf(stderr, "weft-perf: %s: %s\n", path.c_str(),
                   std::string(parsed.status().message()).c_str());
      return 2;
    }
    sources.push_back(absl::StrCat("`", path, "` (", parsed->size(), " passes)"));
    passes.insert(passes.end(), parsed->begin(), parsed->end());
  }
  if (passes.empty()) {
    std::fprintf(stderr, "weft-perf: --merge_raw names no file\n");
    return 2;
  }
  // Weft's columns first (the report compares Weft with the others), then the rest, each
  // in the order the files first name them.
  ReportText text;
  for (const bool weft : {true, false}) {
    for (const auto& pass : passes) {
      for (const Measurement& m : pass) {
        if (absl::StartsWith(m.library, "weft") == weft &&
            std::find(text.libraries.begin(), text.libraries.end(), m.library) ==
                text.libraries.end()) {
          text.libraries.push_back(m.library);
          text.library_labels.push_back(LibraryLabel(m.library));
        }
      }
    }
  }
  text.title = "Data path: passes of several weft-perf runs, pooled";
  text.preamble = {absl::StrCat(
      "Pooled by `weft-perf --merge_raw` from ", passes.size(), " passes: ",
      absl::StrJoin(sources, ", "), ". Each figure is the ", aggregate,
      " of every pass that measured it; each run's method is in its own report.")};
  return WriteReport(RenderReport(text, passes, aggregate), passes);
}

int Main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  SetMinLogLevel(LogLevel::kWarning);
  const std::string aggregate = absl::GetFlag(FLAGS_aggregate);
  if (aggregate != "median" && aggregate != "best") {
    std::fprintf(stderr, "weft-perf: --aggregate must be median or best, not '%s'\n",
                 aggregate.c_str());
    return 2;
  }
  if (!absl::GetFlag(FLAGS_merge_raw).empty()) {
    return MergeRaw(absl::GetFlag(FLAGS_merge_raw), aggregate);
  }
  const std::string priority = BoostPriority();
  std::vector<int> rank_counts;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_ranks), ',', absl::SkipEmpty())) {
    int n = 0;
    if (!absl::SimpleAtoi(s, &n) || n < 1) {
      std::fprintf(stderr, "bad --ranks entry '%s'\n", std::string(s).c_str());
      return 2;
    }
    rank_counts.push_back(n);
  }
  SweepConfig scratch;
  if (absl::Status status = SelectCollectives(absl::GetFlag(FLAGS_collectives), scratch);
      !status.ok()) {
    std::fprintf(stderr, "%s\n", std::string(status.message()).c_str());
    return 2;
  }
  std::vector<std::string> libraries =
      absl::StrSplit(absl::GetFlag(FLAGS_libraries), ',', absl::SkipEmpty());
  auto kind = datapath::ParseTransportKind(absl::GetFlag(FLAGS_transport));
  if (!kind.ok()) {
    std::fprintf(stderr, "%s\n", kind.status().ToString().c_str());
    return 2;
  }

  // RDMA: with a device, Weft runs twice (RC and TCP); without, it says so.
  rdma::IbvVerbs verbs;
  auto devices = verbs.ListDevices();
  const bool have_rdma = devices.ok() && !devices->empty();
  std::string rdma_line;
  if (have_rdma) {
    std::vector<std::string> names;
    for (const auto& d : *devices) names.push_back(d.name);
    rdma_line =
        absl::StrCat("RDMA: ", absl::StrJoin(names, ", "),
                     " found; Weft runs over RC (\"Weft RC\") and over TCP (\"Weft TCP\").");
  } else {
    std::string detail;
    if (!devices.ok()) {
      detail = absl::StrCat("; listing failed: ", devices.status().message());
    } else if (absl::StrContains(verbs.NoDeviceReason(), "no RDMA support")) {
      detail =
          "; the call fails with ENOSYS: this kernel has no RDMA support, so not even "
          "soft-RoCE can be loaded";
    }
    rdma_line =
        absl::StrCat("RDMA: no RDMA device found (ibv_get_device_list returned 0 devices", detail,
                     "). Weft therefore ran over TCP, and this run has no RC-versus-TCP "
                     "comparison; on a node with a device weft-perf shows both.");
  }

  std::vector<std::string> columns, labels;
  for (const std::string& library : libraries) {
    if (library == "weft" && have_rdma && *kind == TransportKind::kAuto) {
      columns.insert(columns.end(), {"weft-rc", "weft-tcp"});
    } else if (library == "weft" || library == "gloo" || library == "mpi") {
      columns.push_back(library);
    }
  }
  for (const std::string& column : columns) labels.push_back(LibraryLabel(column));
  std::vector<std::vector<Measurement>> passes;
  std::vector<std::string> failures;
  std::string weft_transport_note;
  const absl::Time start = absl::Now();
  const int repeats = std::max(1, absl::GetFlag(FLAGS_repeats));
  for (int repeat = 0; repeat < repeats; ++repeat) {
    passes.emplace_back();
    for (int ranks : rank_counts) {
      // Each pass starts with the next library, so every library takes every place in the
      // order (right after another library's ranks exit, or first) equally often.
      for (size_t c = 0; c < columns.size(); ++c) {
        const std::string& column = columns[(c + repeat) % columns.size()];
        std::fprintf(stderr, "weft-perf: pass %d, %s, %d ranks ...\n", repeat + 1, column.c_str(),
                     ranks);
        const absl::Time run_start = absl::Now();
        absl::StatusOr<std::string> out;
        if (column == "weft") {
          out = RunWeft(ranks, *kind, "weft");
        } else if (column == "weft-rc") {
          out = RunWeft(ranks, TransportKind::kRc, "weft-rc");
        } else if (column == "weft-tcp") {
          out = RunWeft(ranks, TransportKind::kTcp, "weft-tcp");
        } else if (column == "gloo") {
          out = RunGloo(ranks);
        } else {
          out = RunMpi(ranks);
        }
        if (!out.ok()) {
          failures.push_back(
              absl::StrCat(column, " with ", ranks, " ranks: ", out.status().message()));
          std::fprintf(stderr, "weft-perf: %s\n", failures.back().c_str());
          continue;
        }
        for (absl::string_view line : absl::StrSplit(*out, '\n', absl::SkipEmpty())) {
          if (absl::StartsWith(line, "# transport=") && weft_transport_note.empty()) {
            weft_transport_note = std::string(line.substr(2));
          }
        }
        auto parsed = ParseMeasurements(*out);
        if (!parsed.ok()) {
          failures.push_back(absl::StrCat(column, ": ", parsed.status().message()));
          continue;
        }
        passes.back().insert(passes.back().end(), parsed->begin(), parsed->end());
        std::fprintf(
            stderr, "weft-perf: %s, %d ranks took %s\n", column.c_str(), ranks,
            absl::FormatDuration(absl::Trunc(absl::Now() - run_start, absl::Seconds(1))).c_str());
      }
    }
  }
  const absl::Duration total = absl::Trunc(absl::Now() - start, absl::Seconds(1));

  std::string mpi_version = "Open MPI";
  if (auto v = RunCommand({absl::GetFlag(FLAGS_mpirun), "--version"}, absl::Seconds(30)); v.ok()) {
    mpi_version = FirstLine(*v);
  }
  const uint64_t cap = absl::GetFlag(FLAGS_max_bytes);
  const uint64_t cap8 = std::min(cap, absl::GetFlag(FLAGS_max_bytes_at_8_ranks));
  std::vector<std::string> mpirun = MpirunPrefix(0);
  mpirun.pop_back();
  mpirun.pop_back();

  ReportText text;
  text.title = "Data path: all-reduce, all-to-all, all-gather and reduce-scatter (weft-perf)";
  text.libraries = columns;
  text.library_labels = labels;
  text.preamble = {
      absl::StrCat("Measured with `bazel run -c opt //bench/datapath:weft-perf` on ",
                   absl::FormatTime("%Y-%m-%d", absl::Now(), absl::UTCTimeZone()), ": ", Machine(),
                   ". The whole run took ", absl::FormatDuration(total),
                   ". Scheduling priority ", priority,
                   " (every library alike). Every rank is a separate process on this one machine and all traffic "
                   "crosses loopback TCP (127.0.0.1)."),
      rdma_line,
      absl::StrCat("Libraries: **Weft** (libweft; ", DescribeWeftTransport(weft_transport_note),
                   "; ranks forked by weft-perf, TCP rendezvous store on rank 0); **Gloo** ",
                   GlooVersion(),
                   " (Debian libgloo-dev; TCP transport, FileStore rendezvous; `gloo::allreduce` "
                   "(ring), `gloo::alltoall`, `gloo::allgather` (ring), no reduce-scatter (its "
                   "only one, the legacy `ReduceScatterHalvingDoubling`, stalls until its read "
                   "timeout in about one run in ten at 4 ranks); ranks forked by "
                   "weft-perf); **MPI**: ",
                   mpi_version, " (`", absl::StrJoin(mpirun, " "),
                    " -np N weft_perf_mpi`; `MPI_Allreduce`, `MPI_Alltoall`, `MPI_Allgather`, "
                   "`MPI_Reduce_scatter_block`)."),
      absl::StrCat(
          "Method: all-reduce is a float32 sum in place; all-to-all moves float32 and its size "
          "is each rank's send buffer; all-gather moves float32 and its size is each rank's "
          "output buffer, every rank's block; reduce-scatter is a float32 sum and its size is "
          "each rank's input buffer, every rank's block (all three rounded up to whole floats "
          "per rank, as nccl-tests size them). The issue's targets are all-reduce's and "
          "all-to-all's; all-gather and reduce-scatter are checked the same way and reported "
          "apart. For each size: one "
          "probe run (which doubles as warm-up), then as many runs as fit in ",
          absl::GetFlag(FLAGS_budget_seconds), " s (", absl::GetFlag(FLAGS_min_iterations),
          " to ", absl::GetFlag(FLAGS_max_iterations),
          "), the same count on every rank, ",
          absl::GetFlag(FLAGS_batches) <= 1
              ? "and a size's time is the slowest rank's mean over them (the average time "
                "per operation nccl-tests report). "
              : absl::StrCat("in up to ", absl::GetFlag(FLAGS_batches),
                             " batches; a batch's time is its slowest rank's mean, and a "
                             "size's time is its best batch. "),
          "The whole sweep runs ",
          repeats,
          " times, the libraries taking turns (each pass starts with the next one), and each "
          "figure is ",
          aggregate == "median"
              ? "the median of those passes: bursts of other jobs on this shared machine "
                "spoil a pass, not the figure, and the median, unlike the best pass, does not "
                "reward the library whose times spread the most. "
              : "the best of those passes, which keeps bursts of other jobs on this shared "
                "machine out of the comparison. ",
          "algbw = size / "
          "time, busbw = algbw × 2(n−1)/n for all-reduce and × (n−1)/n for the others, "
          "GB = 10^9 bytes, as nccl-tests define them. CPU per operation is the CPU time of "
          "every rank's process (all its threads, user and kernel, so the kernel's loopback "
          "copies too) over the same runs, summed over the ranks: with more ranks than cores "
          "it shows whether two libraries are bound by the same work. After timing, each "
          "library's result is checked on known data."),
      absl::StrCat(
          "Caps: sizes run from ", FormatBytes(absl::GetFlag(FLAGS_min_bytes)), " to ",
          cap8 == cap
              ? absl::StrCat(FormatBytes(cap), " for every rank count")
              : absl::StrCat(FormatBytes(cap), " (", FormatBytes(cap8), " with 8 or more ranks)"),
          ", and the time budget per size is ", absl::GetFlag(FLAGS_budget_seconds),
          " s, so the largest sizes get only their minimum of ", absl::GetFlag(FLAGS_min_iterations),
          " timed runs after their probe; "
          "this keeps the whole run near a quarter of an hour. With 4 and 8 ranks the processes "
          "outnumber this machine's ",
          ::sysconf(_SC_NPROCESSORS_ONLN),
          " cores and every library time-shares them; libraries that spin while they wait "
          "(Open MPI's TCP progress loop) suffer most. The figures compare the libraries on "
          "this machine; they are not network figures."),
  };
  if (!failures.empty()) {
    text.preamble.push_back(absl::StrCat("Failed runs: ", absl::StrJoin(failures, "; "), "."));
  }
  if (const int status = WriteReport(RenderReport(text, passes, aggregate), passes); status != 0) {
    return status;
  }
  return failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace weft::bench

int main(int argc, char** argv) { return weft::bench::Main(argc, argv); }
