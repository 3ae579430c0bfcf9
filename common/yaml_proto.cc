#include "common/yaml_proto.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/file.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "google/protobuf/stubs/common.h"
#include "proto/weft/v1/options.pb.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace weft {
namespace {

using ::google::protobuf::Descriptor;
using ::google::protobuf::EnumDescriptor;
using ::google::protobuf::EnumValueDescriptor;
using ::google::protobuf::FieldDescriptor;
using ::google::protobuf::Message;
using ::google::protobuf::OneofDescriptor;
using ::google::protobuf::Reflection;

const weft::v1::FieldRule& RuleOf(const FieldDescriptor* field) {
  return field->options().GetExtension(weft::v1::rule);
}

std::string JoinPath(absl::string_view path, absl::string_view name) {
  return path.empty() ? std::string(name) : absl::StrCat(path, ".", name);
}

// "<prefix>: field '<path>': <problem>; accepted: <accepted>", each part omitted when
// empty. The one place that shapes error messages, for loading and validation alike.
absl::Status Invalid(absl::string_view prefix, absl::string_view path,
                     absl::string_view problem, absl::string_view accepted) {
  std::string message(prefix);
  if (!message.empty()) message += ": ";
  if (!path.empty()) absl::StrAppend(&message, "field '", path, "': ");
  absl::StrAppend(&message, problem);
  if (!accepted.empty()) absl::StrAppend(&message, "; accepted: ", accepted);
  return absl::InvalidArgumentError(message);
}

// ---------------------------------------------------------------------------
// What a field accepts.

bool IsInteger(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
      return true;
    default:
      return false;
  }
}

bool IsUnsigned(const FieldDescriptor* field) {
  return field->cpp_type() == FieldDescriptor::CPPTYPE_UINT32 ||
         field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64;
}

// Inclusive integer range. int128 holds every int64 and uint64 value.
struct IntRange {
  absl::int128 lo;
  absl::int128 hi;
};

IntRange TypeRange(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case FieldDescriptor::CPPTYPE_INT64:
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
    case FieldDescriptor::CPPTYPE_UINT32:
      return {0, std::numeric_limits<uint32_t>::max()};
    default:
      return {0, std::numeric_limits<uint64_t>::max()};
  }
}

absl::string_view TypeWidthName(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return "a 32-bit signed integer";
    case FieldDescriptor::CPPTYPE_INT64:
      return "a 64-bit signed integer";
    case FieldDescriptor::CPPTYPE_UINT32:
      return "a 32-bit unsigned integer";
    default:
      return "a 64-bit unsigned integer";
  }
}

// The type's range narrowed by the field's rule (min rounded up, max rounded down).
IntRange AllowedRange(const FieldDescriptor* field) {
  IntRange range = TypeRange(field);
  const weft::v1::FieldRule& rule = RuleOf(field);
  if (rule.has_min()) {
    const double min = std::ceil(rule.min());
    if (min >= static_cast<double>(range.hi)) {
      range.lo = range.hi;
    } else if (min > static_cast<double>(range.lo)) {
      range.lo = absl::int128(min);
    }
  }
  if (rule.has_max()) {
    const double max = std::floor(rule.max());
    if (max <= static_cast<double>(range.lo)) {
      range.hi = range.lo;
    } else if (max < static_cast<double>(range.hi)) {
      range.hi = absl::int128(max);
    }
  }
  return range;
}

std::string IntToString(absl::int128 value) {
  // Every value here lies in [INT64_MIN, UINT64_MAX].
  return value < 0 ? absl::StrCat(static_cast<int64_t>(value))
                   : absl::StrCat(static_cast<uint64_t>(value));
}

bool InAllowedRange(const FieldDescriptor* field, absl::int128 value) {
  const IntRange range = AllowedRange(field);
  return value >= range.lo && value <= range.hi;
}

bool InAllowedRange(const FieldDescriptor* field, double value) {
  const weft::v1::FieldRule& rule = RuleOf(field);
  // Written so that NaN is out of any range that has a bound.
  if (rule.has_min() && !(value >= rule.min())) return false;
  if (rule.has_max() && !(value <= rule.max())) return false;
  return true;
}

bool MustBeNonEmpty(const FieldDescriptor* field) {
  const weft::v1::FieldRule& rule = RuleOf(field);
  return rule.non_empty() || rule.required();
}

// "SimFault" -> "SIM_FAULT_", "NICState" -> "NIC_STATE_".
std::string EnumPrefix(const EnumDescriptor* type) {
  const std::string& name = type->name();
  std::string prefix;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (i > 0 && absl::ascii_isupper(c)) {
      const char before = name[i - 1];
      const bool next_lower = i + 1 < name.size() && absl::ascii_islower(name[i + 1]);
      if (absl::ascii_islower(before) || absl::ascii_isdigit(before) ||
          (absl::ascii_isupper(before) && next_lower)) {
        prefix += '_';
      }
    }
    prefix += absl::ascii_toupper(c);
  }
  prefix += '_';
  return prefix;
}

std::string EnumAccepted(const EnumDescriptor* type) {
  const std::string prefix = EnumPrefix(type);
  std::vector<std::string> names;
  bool any_prefixed = false;
  for (int i = 0; i < type->value_count(); ++i) {
    absl::string_view name = type->value(i)->name();
    if (absl::ConsumePrefix(&name, prefix)) any_prefixed = true;
    names.push_back(absl::AsciiStrToLower(name));
  }
  return absl::StrCat(
      "one of ", absl::StrJoin(names, ", "),
      any_prefixed ? absl::StrCat(" (any case; the ", prefix, " prefix is optional)")
                   : std::string(" (any case)"));
}

const EnumValueDescriptor* FindEnumValue(const EnumDescriptor* type,
                                         absl::string_view text) {
  const std::string prefixed = absl::StrCat(EnumPrefix(type), text);
  for (int i = 0; i < type->value_count(); ++i) {
    const EnumValueDescriptor* value = type->value(i);
    if (absl::EqualsIgnoreCase(value->name(), text) ||
        absl::EqualsIgnoreCase(value->name(), prefixed)) {
      return value;
    }
  }
  return nullptr;
}

std::string KeysOf(const Descriptor* type) {
  std::vector<std::string> names;
  for (int i = 0; i < type->field_count(); ++i) names.push_back(type->field(i)->name());
  return absl::StrJoin(names, ", ");
}

// What one value of `field` (one element, for a repeated field) accepts.
std::string AcceptedValue(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: {
      const IntRange range = AllowedRange(field);
      return absl::StrCat("an integer from ", IntToString(range.lo), " to ",
                          IntToString(range.hi));
    }
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const weft::v1::FieldRule& rule = RuleOf(field);
      if (rule.has_min() && rule.has_max()) {
        return absl::StrCat("a number from ", rule.min(), " to ", rule.max());
      }
      if (rule.has_min()) return absl::StrCat("a number >= ", rule.min());
      if (rule.has_max()) return absl::StrCat("a number <= ", rule.max());
      return "a finite number";
    }
    case FieldDescriptor::CPPTYPE_BOOL:
      return "true or false";
    case FieldDescriptor::CPPTYPE_ENUM:
      return EnumAccepted(field->enum_type());
    case FieldDescriptor::CPPTYPE_STRING:
      return MustBeNonEmpty(field) ? "a non-empty string" : "a string";
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return absl::StrCat("a map with the keys ", KeysOf(field->message_type()));
  }
  return "";
}

std::string Accepted(const FieldDescriptor* field) {
  if (field->is_repeated()) {
    return absl::StrCat("a sequence whose items are each ", AcceptedValue(field));
  }
  return AcceptedValue(field);
}

// ---------------------------------------------------------------------------
// Scalar text.

// Parses [+-]digits. Returns false when `text` is not of that form; sets *too_big
// (and returns true) when its magnitude exceeds 2^64.
bool ParseDecimal(absl::string_view text, absl::int128* value, bool* too_big) {
  *too_big = false;
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  while (text.size() > 1 && text[0] == '0') text.remove_prefix(1);
  if (text.size() > 20) {  // 2^64 has 20 digits
    *too_big = true;
    return true;
  }
  absl::uint128 magnitude = 0;
  for (char c : text) magnitude = magnitude * 10 + static_cast<uint64_t>(c - '0');
  if (magnitude > absl::uint128(std::numeric_limits<uint64_t>::max())) {
    *too_big = true;
    return true;
  }
  const absl::int128 signed_magnitude = static_cast<absl::int128>(magnitude);
  *value = negative ? -signed_magnitude : signed_magnitude;
  return true;
}

// Like absl::SimpleAtod, but refuses what YAML would not call a number ("nan",
// "infinity", surrounding spaces).
bool ParseNumber(absl::string_view text, double* value) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(c) && c != '+' && c != '-' && c != '.' && c != 'e' &&
        c != 'E') {
      return false;
    }
  }
  return absl::SimpleAtod(text, value);
}

// ---------------------------------------------------------------------------
// Reflection helpers; `index` < 0 means the singular field.

absl::int128 GetInteger(const Message& msg, const FieldDescriptor* field, int index) {
  const Reflection* r = msg.GetReflection();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return index < 0 ? r->GetInt32(msg, field) : r->GetRepeatedInt32(msg, field, index);
    case FieldDescriptor::CPPTYPE_INT64:
      return index < 0 ? r->GetInt64(msg, field) : r->GetRepeatedInt64(msg, field, index);
    case FieldDescriptor::CPPTYPE_UINT32:
      return index < 0 ? r->GetUInt32(msg, field)
                       : r->GetRepeatedUInt32(msg, field, index);
    default:
      return index < 0 ? r->GetUInt64(msg, field)
                       : r->GetRepeatedUInt64(msg, field, index);
  }
}

double GetFloating(const Message& msg, const FieldDescriptor* field, int index) {
  const Reflection* r = msg.GetReflection();
  if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
    return index < 0 ? r->GetFloat(msg, field) : r->GetRepeatedFloat(msg, field, index);
  }
  return index < 0 ? r->GetDouble(msg, field) : r->GetRepeatedDouble(msg, field, index);
}

std::string GetString(const Message& msg, const FieldDescriptor* field, int index) {
  const Reflection* r = msg.GetReflection();
  return index < 0 ? r->GetString(msg, field) : r->GetRepeatedString(msg, field, index);
}

// Sets a singular field or appends to a repeated one. `value` is in the type's range.
void StoreInteger(Message* msg, const FieldDescriptor* field, absl::int128 value) {
  const Reflection* r = msg->GetReflection();
  const bool add = field->is_repeated();
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      const auto v = static_cast<int32_t>(value);
      add ? r->AddInt32(msg, field, v) : r->SetInt32(msg, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      const auto v = static_cast<int64_t>(value);
      add ? r->AddInt64(msg, field, v) : r->SetInt64(msg, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      const auto v = static_cast<uint32_t>(value);
      add ? r->AddUInt32(msg, field, v) : r->SetUInt32(msg, field, v);
      break;
    }
    default: {
      const auto v = static_cast<uint64_t>(value);
      add ? r->AddUInt64(msg, field, v) : r->SetUInt64(msg, field, v);
      break;
    }
  }
}

// ---------------------------------------------------------------------------
// Loading.

std::string Where(absl::string_view source, const YAML::Mark& mark) {
  if (mark.is_null() || mark.line < 0) return std::string(source);
  return absl::StrCat(source, ":", mark.line + 1, ":", mark.column + 1);
}

// A YAML value where something else was expected, as the problem part of an error.
std::string WrongKind(const YAML::Node& value) {
  switch (value.Type()) {
    case YAML::NodeType::Null:
      return "no value given";
    case YAML::NodeType::Scalar:
      return absl::StrCat("value '", value.Scalar(), "' is a scalar");
    case YAML::NodeType::Sequence:
      return "value is a sequence";
    case YAML::NodeType::Map:
      return "value is a map";
    case YAML::NodeType::Undefined:
      break;
  }
  return "value is undefined";
}

// yaml-cpp gives a null value (`key:` with nothing after it) the position of the next
// token, often on a later line; the position of its key, or its parent, is the useful
// one.
YAML::Mark MarkOf(const YAML::Node& node, const YAML::Mark& fallback) {
  if (node.IsNull() || node.Mark().is_null()) return fallback;
  return node.Mark();
}

// Walks one document. Holds only the source name; one instance per call.
class YamlMerger {
 public:
  explicit YamlMerger(absl::string_view source) : source_(source) {}

  absl::Status MergeDocument(const YAML::Node& doc, Message* msg) const {
    if (doc.IsNull()) return absl::OkStatus();  // no overrides
    if (!doc.IsMap()) {
      const std::string kind = doc.IsScalar()
                                   ? absl::StrCat("the scalar '", doc.Scalar(), "'")
                                   : std::string("a sequence");
      return Error(doc.Mark(), "", absl::StrCat("the document is ", kind, ", not a map"),
                   absl::StrCat("a map with the keys ", KeysOf(msg->GetDescriptor())));
    }
    return MergeMap(doc, "", msg);
  }

 private:
  absl::Status Error(const YAML::Mark& mark, absl::string_view path,
                     absl::string_view problem, absl::string_view accepted) const {
    return Invalid(Where(source_, mark), path, problem, accepted);
  }

  absl::Status MergeMap(const YAML::Node& map, const std::string& path,
                        Message* msg) const {
    const Descriptor* type = msg->GetDescriptor();
    absl::flat_hash_map<std::string, YAML::Mark> seen;
    absl::flat_hash_map<const OneofDescriptor*, std::string> oneof_members;
    for (const auto& entry : map) {
      const YAML::Node& key = entry.first;
      const YAML::Node& value = entry.second;
      if (!key.IsScalar()) {
        const std::string problem =
            key.IsNull()
                ? std::string("a key is empty")
                : absl::StrCat("a key is ", key.IsMap() ? "a map" : "a sequence");
        return Error(MarkOf(key, map.Mark()), path, problem,
                     absl::StrCat("one of ", KeysOf(type)));
      }
      const std::string& name = key.Scalar();
      const std::string field_path = JoinPath(path, name);
      const auto [first, inserted] = seen.emplace(name, key.Mark());
      if (!inserted) {
        return Error(key.Mark(), field_path,
                     absl::StrCat("duplicate key (first at line ", first->second.line + 1,
                                  ", column ", first->second.column + 1, ")"),
                     "each key at most once");
      }
      const FieldDescriptor* field = type->FindFieldByName(name);
      if (field == nullptr) {
        return Error(key.Mark(), field_path, "unknown key",
                     absl::StrCat("one of ", KeysOf(type)));
      }
      if (const OneofDescriptor* oneof = field->real_containing_oneof()) {
        const auto [other, first_of_oneof] = oneof_members.emplace(oneof, name);
        if (!first_of_oneof) {
          std::vector<std::string> members;
          for (int i = 0; i < oneof->field_count(); ++i) {
            members.push_back(oneof->field(i)->name());
          }
          return Error(key.Mark(), field_path,
                       absl::StrCat("conflicts with '", JoinPath(path, other->second),
                                    "' (both are in oneof '", oneof->name(), "')"),
                       absl::StrCat("at most one of ", absl::StrJoin(members, ", ")));
        }
      }
      RETURN_IF_ERROR(MergeField(key, value, field_path, field, msg));
    }
    return absl::OkStatus();
  }

  absl::Status MergeField(const YAML::Node& key, const YAML::Node& value,
                          const std::string& path, const FieldDescriptor* field,
                          Message* msg) const {
    const Reflection* r = msg->GetReflection();
    const YAML::Mark mark = MarkOf(value, key.Mark());
    if (field->is_map()) {
      return Error(key.Mark(), path,
                   "is a protobuf map field, which YAML config loading does not support",
                   "");
    }
    if (field->is_repeated()) {
      if (!value.IsSequence())
        return Error(mark, path, WrongKind(value), Accepted(field));
      r->ClearField(msg, field);  // a sequence replaces, never appends to, the defaults
      int index = 0;
      for (const YAML::Node& item : value) {
        const std::string item_path = absl::StrCat(path, "[", index++, "]");
        const YAML::Mark item_mark = MarkOf(item, mark);
        if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
          if (!item.IsNull() && !item.IsMap()) {
            return Error(item_mark, item_path, WrongKind(item), AcceptedValue(field));
          }
          Message* element = r->AddMessage(msg, field);
          if (item.IsMap()) RETURN_IF_ERROR(MergeMap(item, item_path, element));
        } else {
          RETURN_IF_ERROR(StoreScalar(item, item_mark, item_path, field, msg));
        }
      }
      return absl::OkStatus();
    }
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (value.IsNull()) return absl::OkStatus();  // no overrides
      if (!value.IsMap()) return Error(mark, path, WrongKind(value), Accepted(field));
      return MergeMap(value, path, r->MutableMessage(msg, field));
    }
    return StoreScalar(value, mark, path, field, msg);
  }

  // Parses a scalar into a singular field, or appends it to a repeated one.
  absl::Status StoreScalar(const YAML::Node& value, const YAML::Mark& mark,
                           const std::string& path, const FieldDescriptor* field,
                           Message* msg) const {
    if (!value.IsScalar())
      return Error(mark, path, WrongKind(value), AcceptedValue(field));
    const std::string& text = value.Scalar();
    const std::string quoted = absl::StrCat("value '", text, "'");
    const Reflection* r = msg->GetReflection();
    const bool add = field->is_repeated();
    auto fail = [&](absl::string_view problem) {
      return Error(mark, path, absl::StrCat(quoted, " ", problem), AcceptedValue(field));
    };

    if (IsInteger(field)) {
      absl::int128 parsed = 0;
      bool too_big = false;
      if (!ParseDecimal(text, &parsed, &too_big)) {
        double number = 0;
        if (ParseNumber(text, &number) && std::isfinite(number) &&
            number != std::trunc(number)) {
          return fail("is a fraction");
        }
        return fail("is not an integer");
      }
      const bool negative = absl::StartsWith(text, "-") && (too_big || parsed != 0);
      if (negative && IsUnsigned(field)) return fail("is negative");
      const IntRange type_range = TypeRange(field);
      if (too_big || parsed < type_range.lo || parsed > type_range.hi) {
        return fail(absl::StrCat("overflows ", TypeWidthName(field)));
      }
      if (!InAllowedRange(field, parsed)) return fail("is out of range");
      StoreInteger(msg, field, parsed);
      return absl::OkStatus();
    }

    switch (field->cpp_type()) {
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT: {
        double number = 0;
        if (!ParseNumber(text, &number)) return fail("is not a number");
        const bool is_float = field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT;
        if (!std::isfinite(number) ||
            (is_float && std::abs(number) > std::numeric_limits<float>::max())) {
          return fail(absl::StrCat("overflows ", is_float ? "a 32-bit" : "a 64-bit",
                                   " floating-point number"));
        }
        if (!InAllowedRange(field, number)) return fail("is out of range");
        if (is_float) {
          const auto v = static_cast<float>(number);
          add ? r->AddFloat(msg, field, v) : r->SetFloat(msg, field, v);
        } else {
          add ? r->AddDouble(msg, field, number) : r->SetDouble(msg, field, number);
        }
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        bool flag;
        if (absl::EqualsIgnoreCase(text, "true")) {
          flag = true;
        } else if (absl::EqualsIgnoreCase(text, "false")) {
          flag = false;
        } else {
          return fail("is not a boolean");
        }
        add ? r->AddBool(msg, field, flag) : r->SetBool(msg, field, flag);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_ENUM: {
        const EnumValueDescriptor* found = FindEnumValue(field->enum_type(), text);
        if (found == nullptr) {
          return fail(absl::StrCat("is not a ", field->enum_type()->name(), " name"));
        }
        add ? r->AddEnum(msg, field, found) : r->SetEnum(msg, field, found);
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_STRING:
        if (text.empty() && MustBeNonEmpty(field)) return fail("is empty");
        // A proto3 string that is not UTF-8 loads but does not survive the wire: the
        // message would fail to parse wherever it is sent or stored.
        if (field->type() == FieldDescriptor::TYPE_STRING &&
            !google::protobuf::internal::IsStructurallyValidUTF8(text.data(),
                                                                 static_cast<int>(text.size()))) {
          return Error(mark, path,
                       absl::StrCat("value '", absl::CHexEscape(text), "' is not UTF-8"),
                       "UTF-8 text");
        }
        add ? r->AddString(msg, field, text) : r->SetString(msg, field, text);
        return absl::OkStatus();
      default:
        // Messages are handled by MergeField; integers above.
        return absl::InternalError(absl::StrCat("unexpected field type at ", path));
    }
  }

  const std::string source_;
};

// ---------------------------------------------------------------------------
// Validation of built messages.

bool IsZero(const Message& msg, const FieldDescriptor* field) {
  const Reflection* r = msg.GetReflection();
  if (IsInteger(field)) return GetInteger(msg, field, -1) == 0;
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
      return GetFloating(msg, field, -1) == 0;
    case FieldDescriptor::CPPTYPE_BOOL:
      return !r->GetBool(msg, field);
    case FieldDescriptor::CPPTYPE_ENUM:
      return r->GetEnumValue(msg, field) == 0;
    case FieldDescriptor::CPPTYPE_STRING:
      return r->GetString(msg, field).empty();
    default:
      return !r->HasField(msg, field);
  }
}

// Checks min/max and non_empty on one non-message value.
absl::Status CheckValue(const Message& msg, const FieldDescriptor* field, int index,
                        const std::string& path, absl::string_view context) {
  std::string shown;
  bool ok = true;
  if (IsInteger(field)) {
    const absl::int128 value = GetInteger(msg, field, index);
    ok = InAllowedRange(field, value);
    shown = IntToString(value);
  } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE ||
             field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT) {
    const double value = GetFloating(msg, field, index);
    ok = InAllowedRange(field, value);
    shown = absl::StrCat(value);
  } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
    if (RuleOf(field).non_empty() && GetString(msg, field, index).empty()) {
      return Invalid(context, path, "value '' is empty", AcceptedValue(field));
    }
  }
  if (!ok) {
    return Invalid(context, path, absl::StrCat("value '", shown, "' is out of range"),
                   AcceptedValue(field));
  }
  return absl::OkStatus();
}

absl::Status ValidateMessage(const Message& msg, const std::string& path,
                             absl::string_view context) {
  const Descriptor* type = msg.GetDescriptor();
  const Reflection* r = msg.GetReflection();
  for (int i = 0; i < type->field_count(); ++i) {
    const FieldDescriptor* field = type->field(i);
    if (field->is_map()) continue;  // rules are not supported on map fields
    const std::string field_path = JoinPath(path, field->name());
    const bool required = RuleOf(field).required();
    const bool is_message = field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;

    if (field->is_repeated()) {
      const int size = r->FieldSize(msg, field);
      if (required && size == 0) {
        return Invalid(context, field_path, "required but empty", Accepted(field));
      }
      for (int k = 0; k < size; ++k) {
        const std::string item_path = absl::StrCat(field_path, "[", k, "]");
        RETURN_IF_ERROR(is_message ? ValidateMessage(r->GetRepeatedMessage(msg, field, k),
                                                     item_path, context)
                                   : CheckValue(msg, field, k, item_path, context));
      }
      continue;
    }
    // Rules apply to present values; without explicit presence a value always is.
    const bool present = field->has_presence() ? r->HasField(msg, field) : true;
    if (required && (!present || (!field->has_presence() && IsZero(msg, field)))) {
      return Invalid(context, field_path, "required but not set", Accepted(field));
    }
    if (!present) continue;
    RETURN_IF_ERROR(is_message
                        ? ValidateMessage(r->GetMessage(msg, field), field_path, context)
                        : CheckValue(msg, field, -1, field_path, context));
  }
  return absl::OkStatus();
}

// Where each document of a stream starts, for the first `limit` documents. Replaces
// YAML::LoadAll, which never returns on some malformed input (yaml-cpp 0.7 yields an
// endless run of empty documents at one position for a stray ',': jbeder/yaml-cpp#1040).
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override {
    marks.push_back(mark);
    contents.push_back(mark);
    seen_content_ = false;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { Content(mark); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { Content(mark); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                const std::string&) override {
    Content(mark);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    Content(mark);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    Content(mark);
  }
  void OnMapEnd() override {}

  std::vector<YAML::Mark> marks;     // where each document starts
  std::vector<YAML::Mark> contents;  // where its first node is (else its start)

 private:
  void Content(const YAML::Mark& mark) {
    if (seen_content_) return;
    seen_content_ = true;
    contents.back() = mark;
  }
  bool seen_content_ = false;
};

}  // namespace

absl::Status MergeYamlString(absl::string_view yaml, absl::string_view source_name,
                             Message* msg) {
  try {
    std::stringstream input{std::string(yaml)};
    YAML::Parser parser(input);
    DocumentStarts starts;
    while (starts.marks.size() < 2 && parser.HandleNextDocument(starts)) {
    }
    if (starts.marks.empty()) return absl::OkStatus();  // empty file: no overrides
    if (starts.marks.size() > 1) {
      const YAML::Mark& second = starts.marks[1];
      if (second.pos == starts.marks[0].pos) {
        // No progress between documents: the parser is stuck on a stray character.
        return Invalid(Where(source_name, second), "",
                       "YAML syntax error: unexpected character", "");
      }
      return Invalid(Where(source_name, starts.contents[1]), "",
                     "the file holds more than one YAML document", "a single document");
    }
    return YamlMerger(source_name).MergeDocument(YAML::Load(std::string(yaml)), msg);
  } catch (const YAML::ParserException& e) {
    return Invalid(Where(source_name, e.mark), "",
                   absl::StrCat("YAML syntax error: ", e.msg), "");
  } catch (const YAML::Exception& e) {
    return Invalid(Where(source_name, e.mark), "", absl::StrCat("YAML error: ", e.msg),
                   "");
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat(source_name, ": unexpected error while loading YAML: ", e.what()));
  }
}

absl::Status MergeYamlFile(absl::string_view path, Message* msg) {
  ASSIGN_OR_RETURN(const std::string contents, ReadWholeFile(path, "config file"));
  return MergeYamlString(contents, path, msg);
}

absl::Status ValidateRules(const Message& msg, absl::string_view context) {
  return ValidateMessage(msg, "", context);
}

}  // namespace weft
