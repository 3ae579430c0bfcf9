#include "policy/policy_diff.h"

#include <algorithm>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace weft::policy {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string ScalarText(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool repeated = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(repeated ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(repeated ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(repeated ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_ENUM:
      return repeated ? r->GetRepeatedEnum(m, f, index)->name() : r->GetEnum(m, f)->name();
    case FieldDescriptor::CPPTYPE_BOOL:
      return (repeated ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "true" : "false";
    default:
      return "?";
  }
}

void Flatten(const Message& m, const std::string& prefix,
             std::map<std::string, std::string>& out) {
  const Reflection* r = m.GetReflection();
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string key = absl::StrCat(prefix, f->name());
    if (f->is_map()) {
      std::vector<std::pair<uint64_t, std::string>> entries;
      for (int j = 0; j < r->FieldSize(m, f); ++j) {
        const Message& entry = r->GetRepeatedMessage(m, f, j);
        const FieldDescriptor* k = entry.GetDescriptor()->map_key();
        const FieldDescriptor* v = entry.GetDescriptor()->map_value();
        entries.emplace_back(entry.GetReflection()->GetUInt32(entry, k),
                             absl::StrCat(ScalarText(entry, k, 0), ":", ScalarText(entry, v, 0)));
      }
      if (entries.empty()) continue;
      std::sort(entries.begin(), entries.end());
      std::vector<std::string> texts;
      for (auto& e : entries) texts.push_back(std::move(e.second));
      out[key] = absl::StrJoin(texts, ",");
    } else if (f->is_repeated()) {
      if (r->FieldSize(m, f) == 0) continue;
      std::vector<std::string> texts;
      for (int j = 0; j < r->FieldSize(m, f); ++j) texts.push_back(ScalarText(m, f, j));
      out[key] = absl::StrJoin(texts, ",");
    } else if (f->has_presence() ? r->HasField(m, f) : true) {
      out[key] = ScalarText(m, f, 0);
    }
  }
}

}  // namespace

std::map<std::string, std::string> FlattenDesiredState(const weft::v1::DesiredState& state) {
  std::map<std::string, std::string> out;
  if (state.has_qos()) Flatten(state.qos(), "qos.", out);
  if (state.has_dcqcn()) Flatten(state.dcqcn(), "dcqcn.", out);
  return out;
}

weft::v1::DiffPolicyResponse DiffDesiredStates(
    const std::map<std::string, std::optional<weft::v1::DesiredState>>& current,
    const std::map<std::string, weft::v1::DesiredState>& next) {
  std::map<std::tuple<std::string, std::string, std::string>, uint32_t> counts;
  weft::v1::DiffPolicyResponse response;
  response.set_nodes_total(next.size());
  for (const auto& [node, state] : next) {
    const std::map<std::string, std::string> to = FlattenDesiredState(state);
    std::map<std::string, std::string> from;
    auto it = current.find(node);
    if (it != current.end() && it->second.has_value()) from = FlattenDesiredState(*it->second);
    bool changed = false;
    std::set<std::string> keys;
    for (const auto& [k, v] : to) keys.insert(k);
    for (const auto& [k, v] : from) keys.insert(k);
    for (const std::string& key : keys) {
      auto f = from.find(key);
      auto t = to.find(key);
      const std::string before = f == from.end() ? "" : f->second;
      const std::string after = t == to.end() ? "(left as is)" : t->second;
      if (f != from.end() && t != to.end() && before == after) continue;
      ++counts[{key, before, after}];
      changed = true;
    }
    if (changed) response.set_nodes_changed(response.nodes_changed() + 1);
  }
  std::vector<std::pair<std::tuple<std::string, std::string, std::string>, uint32_t>> sorted(
      counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    if (std::get<0>(a.first) != std::get<0>(b.first)) {
      return std::get<0>(a.first) < std::get<0>(b.first);
    }
    return a.second > b.second;
  });
  for (const auto& [key, nodes] : sorted) {
    weft::v1::ParameterChange* change = response.add_changes();
    change->set_parameter(std::get<0>(key));
    change->set_from(std::get<1>(key));
    change->set_to(std::get<2>(key));
    change->set_nodes(nodes);
  }
  return response;
}

}  // namespace weft::policy
