#include "cli/prometheus_command.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace weft {
namespace {

constexpr char kUsage[] = "usage: weftctl [--controller HOST:PORT] prometheus targets [--out FILE]";

bool IsWildcardHost(absl::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

absl::Status ErrnoError(absl::string_view what, const std::string& path) {
  return absl::InternalError(absl::StrCat(what, " ", path, ": ", strerror(errno)));
}

}  // namespace

std::string ScrapeAddress(const weft::v1::NodeInfo& node) {
  const std::string& address = node.metrics_address();
  const size_t colon = address.rfind(':');
  if (address.empty() || colon == std::string::npos) return "";
  const absl::string_view host = absl::string_view(address).substr(0, colon);
  if (!IsWildcardHost(host)) return address;
  return absl::StrCat(node.name(), address.substr(colon));
}

std::string FormatFileSdTargets(const weft::v1::ListNodesResponse& nodes,
                                std::vector<std::string>* skipped) {
  std::vector<const weft::v1::NodeInfo*> sorted;
  for (const weft::v1::NodeStatus& node : nodes.nodes()) sorted.push_back(&node.info());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto* a, const auto* b) { return a->name() < b->name(); });

  google::protobuf::ListValue groups;
  for (const weft::v1::NodeInfo* node : sorted) {
    const std::string address = ScrapeAddress(*node);
    if (address.empty()) {
      if (skipped != nullptr) skipped->push_back(node->name());
      continue;
    }
    google::protobuf::Struct& group = *groups.add_values()->mutable_struct_value();
    auto& fields = *group.mutable_fields();
    fields["targets"].mutable_list_value()->add_values()->set_string_value(address);
    auto& labels = *fields["labels"].mutable_struct_value()->mutable_fields();
    labels["node"].set_string_value(node->name());
    labels["rack"].set_string_value(node->rack());
    labels["pod"].set_string_value(node->pod());
  }
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  std::string json;
  // A ListValue of strings always prints; the status cannot be an error here.
  (void)google::protobuf::util::MessageToJsonString(groups, &json, options);
  // proto3 JSON prints an empty list as nothing; Prometheus wants [].
  if (groups.values_size() == 0) json = "[]\n";
  return json;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  const std::string temp = absl::StrCat(path, ".tmp.", getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", temp);
  size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      absl::Status error = ErrnoError("cannot write", temp);
      ::close(fd);
      ::unlink(temp.c_str());
      return error;
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    absl::Status error = ErrnoError("cannot flush", temp);
    ::unlink(temp.c_str());
    return error;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    absl::Status error = ErrnoError("cannot rename onto", path);
    ::unlink(temp.c_str());
    return error;
  }
  return absl::OkStatus();
}

int RunPrometheusCommand(const std::vector<std::string>& args, const CommandContext& context) {
  std::ostream& err = context.err;
  const std::string& out_path = context.options.out;
  if (args.size() != 2 || args[1] != "targets") {
    err << "weftctl: 'prometheus' has one subcommand: targets\n" << kUsage << "\n";
    return kExitUsage;
  }
  weft::v1::ListNodesResponse nodes;
  absl::Status status = context.controller.Call(&weft::v1::AdminService::StubInterface::ListNodes,
                                                weft::v1::ListNodesRequest(), &nodes);
  if (!status.ok()) return context.Failed("prometheus targets: list nodes", status);
  std::vector<std::string> skipped;
  const std::string json = FormatFileSdTargets(nodes, &skipped);
  if (!skipped.empty()) {
    err << "weftctl: " << skipped.size() << " of " << nodes.nodes_size()
        << " nodes left out: their agent serves no /metrics (metrics_address off, or an "
           "agent that does not report it), first: "
        << skipped.front() << "\n";
  }
  if (out_path.empty()) {
    context.out << json;
    return kExitOk;
  }
  if (absl::Status written = WriteFileAtomically(out_path, json); !written.ok()) {
    return context.Failed("prometheus targets", written);
  }
  err << "weftctl: wrote " << (nodes.nodes_size() - skipped.size()) << " targets to "
      << out_path << "\n";
  return kExitOk;
}

}  // namespace weft
