#include "bench/datapath/perf_report.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace weft::bench {

const char* CollectiveName(Collective collective) {
  switch (collective) {
    case Collective::kAllReduce:
      return "all-reduce";
    case Collective::kAllToAll:
      return "all-to-all";
    case Collective::kAllGather:
      return "all-gather";
    case Collective::kReduceScatter:
      return "reduce-scatter";
  }
  return "?";
}

bool ParseCollective(absl::string_view name, Collective* collective) {
  for (Collective c : kAllCollectives) {
    if (name == CollectiveName(c)) {
      *collective = c;
      return true;
    }
  }
  return false;
}

bool IsTargetCollective(Collective collective) {
  return collective == Collective::kAllReduce || collective == Collective::kAllToAll;
}

void KeepBest(std::vector<Measurement>& all, const std::vector<Measurement>& more) {
  for (const Measurement& m : more) {
    auto same = std::find_if(all.begin(), all.end(), [&](const Measurement& o) {
      return o.library == m.library && o.collective == m.collective && o.ranks == m.ranks &&
             o.bytes == m.bytes;
    });
    if (same == all.end()) {
      all.push_back(m);
    } else if (m.time_us < same->time_us) {
      *same = m;
    }
  }
}

std::vector<Measurement> MedianOfPasses(const std::vector<std::vector<Measurement>>& passes) {
  std::map<std::tuple<std::string, Collective, int, size_t>, std::vector<Measurement>> groups;
  std::vector<std::tuple<std::string, Collective, int, size_t>> order;  // first seen first
  for (const auto& pass : passes) {
    for (const Measurement& m : pass) {
      auto key = std::make_tuple(m.library, m.collective, m.ranks, m.bytes);
      auto& group = groups[key];
      if (group.empty()) order.push_back(key);
      group.push_back(m);
    }
  }
  std::vector<Measurement> medians;
  for (const auto& key : order) {
    std::vector<Measurement>& group = groups[key];
    std::sort(group.begin(), group.end(), [](const Measurement& a, const Measurement& b) {
      return a.time_us < b.time_us;
    });
    const size_t mid = group.size() / 2;
    Measurement median = group.size() % 2 == 1 ? group[mid] : group[mid - 1];
    if (group.size() % 2 == 0) {
      median.time_us = (group[mid - 1].time_us + group[mid].time_us) / 2;
      median.cpu_us = (group[mid - 1].cpu_us + group[mid].cpu_us) / 2;
    }
    medians.push_back(median);
  }
  return medians;
}

double AlgBandwidthGBps(size_t bytes, double time_us) {
  if (time_us <= 0) return 0;
  return static_cast<double>(bytes) / (time_us * 1e3);
}

double BusBandwidthGBps(Collective collective, int ranks, size_t bytes, double time_us) {
  const double n = ranks;
  // All-to-all, all-gather and reduce-scatter move (n-1)/n of the buffer through each
  // rank's link.
  const double factor = collective == Collective::kAllReduce ? 2 * (n - 1) / n : (n - 1) / n;
  return AlgBandwidthGBps(bytes, time_us) * factor;
}

std::string FormatBytes(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) {
    return absl::StrCat(bytes >> 20, " MiB");
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return absl::StrCat(bytes >> 10, " KiB");
  return absl::StrCat(bytes, " B");
}

namespace {

using Key = std::tuple<Collective, int, size_t>;

std::map<std::string, std::map<Key, const Measurement*>> Index(
    const std::vector<Measurement>& measurements) {
  std::map<std::string, std::map<Key, const Measurement*>> index;
  for (const Measurement& m : measurements) {
    index[m.library][Key(m.collective, m.ranks, m.bytes)] = &m;
  }
  return index;
}

std::string Time(double us) {
  if (us >= 1e5) return absl::StrFormat("%.0f", us);
  if (us >= 100) return absl::StrFormat("%.0f", us);
  return absl::StrFormat("%.1f", us);
}

// The label `library` is shown with ("gloo" -> "Gloo").
std::string LabelOf(const ReportText& text, const std::string& library) {
  for (size_t i = 0; i < text.libraries.size() && i < text.library_labels.size(); ++i) {
    if (text.libraries[i] == library) return text.library_labels[i];
  }
  return library;
}

std::string CpuTime(double us) {
  return us >= 1000 ? absl::StrFormat("%.1f ms", us / 1000) : absl::StrFormat("%.0f µs", us);
}

}  // namespace

TargetCheck CheckTargets(const std::vector<Measurement>& measurements, const std::string& weft,
                         const std::string& baseline, size_t bandwidth_from_bytes,
                         size_t latency_up_to_bytes, std::optional<Collective> only) {
  auto index = Index(measurements);
  TargetCheck check;
  check.worst_bandwidth_ratio = 1e30;
  check.worst_latency_ratio = 1e30;
  for (const auto& [key, ours] : index[weft]) {
    const Collective collective = std::get<0>(key);
    if (only ? collective != *only : !IsTargetCollective(collective)) continue;
    auto it = index[baseline].find(key);
    if (it == index[baseline].end()) continue;
    const double ratio = it->second->time_us / ours->time_us;
    const size_t bytes = std::get<2>(key);
    if (bytes >= bandwidth_from_bytes) {
      ++check.bandwidth_cases;
      if (ratio >= 1.0) ++check.bandwidth_met;
      check.worst_bandwidth_ratio = std::min(check.worst_bandwidth_ratio, ratio);
    }
    if (bytes <= latency_up_to_bytes) {
      ++check.latency_cases;
      if (ratio >= 1.0) ++check.latency_met;
      check.worst_latency_ratio = std::min(check.worst_latency_ratio, ratio);
    }
  }
  if (check.bandwidth_cases == 0) check.worst_bandwidth_ratio = 0;
  if (check.latency_cases == 0) check.worst_latency_ratio = 0;
  return check;
}

std::string RenderMarkdown(const ReportText& text, const std::vector<Measurement>& measurements) {
  auto index = Index(measurements);
  std::string out = absl::StrCat("## ", text.title, "\n\n");
  for (const std::string& paragraph : text.preamble) absl::StrAppend(&out, paragraph, "\n\n");
  const std::string& weft = text.libraries.front();
  auto label = [&](size_t i) { return LabelOf(text, text.libraries[i]); };

  std::set<std::pair<Collective, int>> tables;
  for (const Measurement& m : measurements) tables.insert({m.collective, m.ranks});
  for (const auto& [collective, ranks] : tables) {
    absl::StrAppend(&out, "### ", CollectiveName(collective), ", ", ranks, " ranks\n\n");
    std::vector<std::string> header = {"size"};
    for (size_t i = 0; i < text.libraries.size(); ++i) header.push_back(label(i) + " µs");
    for (size_t i = 0; i < text.libraries.size(); ++i) header.push_back(label(i) + " busbw GB/s");
    for (size_t i = 1; i < text.libraries.size(); ++i) {
      header.push_back(absl::StrCat(label(0), " vs ", label(i)));
    }
    absl::StrAppend(&out, "| ", absl::StrJoin(header, " | "), " |\n|");
    for (size_t i = 0; i < header.size(); ++i) absl::StrAppend(&out, i == 0 ? "---|" : "---:|");
    absl::StrAppend(&out, "\n");
    std::set<size_t> sizes;
    for (const Measurement& m : measurements) {
      if (m.collective == collective && m.ranks == ranks) sizes.insert(m.bytes);
    }
    for (size_t bytes : sizes) {
      const Key key(collective, ranks, bytes);
      std::vector<std::string> row = {FormatBytes(bytes)};
      std::vector<const Measurement*> found;
      for (const std::string& library : text.libraries) {
        auto it = index[library].find(key);
        found.push_back(it == index[library].end() ? nullptr : it->second);
      }
      for (const Measurement* m : found) row.push_back(m ? Time(m->time_us) : "–");
      for (const Measurement* m : found) {
        row.push_back(
            m ? absl::StrFormat("%.3f", BusBandwidthGBps(collective, ranks, bytes, m->time_us))
              : "–");
      }
      for (size_t i = 1; i < found.size(); ++i) {
        row.push_back(found[0] && found[i]
                          ? absl::StrFormat("%.2f×", found[i]->time_us / found[0]->time_us)
                          : "–");
      }
      absl::StrAppend(&out, "| ", absl::StrJoin(row, " | "), " |\n");
    }
    absl::StrAppend(&out, "\n");
  }

  absl::StrAppend(&out, "### Against the targets\n\n", RenderTargetLines(text, measurements));
  absl::StrAppend(&out, "\nRatios are the other library's time over ", label(0),
                  "'s (equal to the bus bandwidth ratio): above 1× ", label(0), " is faster.\n");
  return out;
}

std::string RenderTargetLines(const ReportText& text,
                              const std::vector<Measurement>& measurements) {
  auto label = [&](size_t i) { return LabelOf(text, text.libraries[i]); };
  const std::string& weft = text.libraries.front();
  // The targets first (nullopt), then each measured collective outside them.
  std::vector<std::optional<Collective>> groups = {std::nullopt};
  for (Collective c : kAllCollectives) {
    const bool measured = std::any_of(measurements.begin(), measurements.end(),
                                      [&](const Measurement& m) { return m.collective == c; });
    if (!IsTargetCollective(c) && measured) groups.push_back(c);
  }
  std::string out;
  for (const std::optional<Collective>& group : groups) {
    const std::string prefix =
        group ? absl::StrCat("beyond the targets (", CollectiveName(*group), "), ") : "";
    for (size_t i = 1; i < text.libraries.size(); ++i) {
      const TargetCheck check =
          CheckTargets(measurements, weft, text.libraries[i], kBandwidthTargetFromBytes,
                       kLatencyTargetUpToBytes, group);
      // A baseline that lacks a collective outside the targets has no line for it.
      if (group && check.bandwidth_cases + check.latency_cases == 0) continue;
      absl::StrAppend(
          &out,
          absl::StrFormat("- %svs %s: bus bandwidth at 1 MiB and above at least %s's in %d of "
                          "%d cases (worst %.2f×); latency from 8 B to 64 KiB at most %s's in "
                          "%d of %d cases (worst %.2f×).\n",
                          prefix, label(i), label(i), check.bandwidth_met,
                          check.bandwidth_cases, check.worst_bandwidth_ratio, label(i),
                          check.latency_met, check.latency_cases, check.worst_latency_ratio));
    }
  }
  return out;
}

std::string RenderCpuComparison(const ReportText& text,
                                const std::vector<Measurement>& measurements,
                                const std::string& baseline, size_t from_bytes) {
  const std::string& weft = text.libraries.front();
  auto index = Index(measurements);
  std::vector<double> ratios;
  for (const auto& [key, ours] : index[weft]) {
    auto theirs = index[baseline].find(key);
    if (!IsTargetCollective(std::get<0>(key))) continue;
    if (theirs == index[baseline].end() || std::get<2>(key) < from_bytes) continue;
    if (ours->cpu_us <= 0 || theirs->second->cpu_us <= 0) continue;
    ratios.push_back(ours->cpu_us / theirs->second->cpu_us);
  }
  if (ratios.empty()) return "";
  std::sort(ratios.begin(), ratios.end());
  const size_t mid = ratios.size() / 2;
  const double median =
      ratios.size() % 2 == 1 ? ratios[mid] : (ratios[mid - 1] + ratios[mid]) / 2;
  return absl::StrFormat(
      "%s's CPU per operation (every rank's process, user and kernel) from %s is "
      "%.2f-%.2f× %s's (median %.2f×, %d cases).\n",
      LabelOf(text, weft), FormatBytes(from_bytes), ratios.front(), ratios.back(),
      LabelOf(text, baseline), median, ratios.size());
}

std::string RenderShortfalls(const ReportText& text, const std::vector<Measurement>& measurements,
                             const std::vector<std::vector<Measurement>>& passes,
                             const std::string& baseline, size_t bandwidth_from_bytes,
                             size_t latency_up_to_bytes) {
  const std::string& weft = text.libraries.front();
  const std::string baseline_label = LabelOf(text, baseline);
  auto index = Index(measurements);
  std::vector<std::map<std::string, std::map<Key, const Measurement*>>> pass_index;
  for (const auto& pass : passes) pass_index.push_back(Index(pass));
  std::string out;
  for (const auto& [key, ours] : index[weft]) {
    auto theirs = index[baseline].find(key);
    const size_t bytes = std::get<2>(key);
    if (theirs == index[baseline].end() || !IsTargetCollective(std::get<0>(key))) continue;
    if (bytes < bandwidth_from_bytes && bytes > latency_up_to_bytes) continue;
    const double ratio = theirs->second->time_us / ours->time_us;
    if (ratio >= 1.0) continue;
    std::vector<std::string> by_pass;
    int at_least = 0;
    for (auto& pass : pass_index) {
      auto a = pass[weft].find(key);
      auto b = pass[baseline].find(key);
      if (a == pass[weft].end() || b == pass[baseline].end()) continue;
      const double pass_ratio = b->second->time_us / a->second->time_us;
      by_pass.push_back(absl::StrFormat("%.2f", pass_ratio));
      if (pass_ratio >= 1.0) ++at_least;
    }
    std::string cpu;
    if (ours->cpu_us > 0 && theirs->second->cpu_us > 0) {
      cpu = absl::StrFormat("; CPU per operation, all ranks: %s %s, %s %s",
                            LabelOf(text, weft), CpuTime(ours->cpu_us), baseline_label,
                            CpuTime(theirs->second->cpu_us));
    }
    absl::StrAppend(
        &out, absl::StrFormat("- below %s: %s, %d ranks, %s: %.2f× (by pass: %s; at least "
                              "%s's in %d of %d passes%s)\n",
                              baseline_label, CollectiveName(std::get<0>(key)),
                              std::get<1>(key), FormatBytes(bytes), ratio,
                              absl::StrJoin(by_pass, ", "), baseline_label, at_least,
                              by_pass.size(), cpu));
  }
  return out;
}

}  // namespace weft::bench
