// Strict loading of YAML config files into protobuf messages, and the checks of the
// (weft.v1.rule) field options (proto/weft/v1/options.proto).
//
// A config schema is a proto message; a YAML file is merged over a message that
// already holds the defaults, so absent keys keep their defaults. Loading is strict:
// an unknown key, a wrong type, an out-of-range value, an unknown enum name, a
// duplicate key or a YAML syntax error is INVALID_ARGUMENT whose message names
// file:line:column (1-based), the dotted field path, the value and what is accepted:
//
//   agent.yaml:7:14: field 'simulated.nics': value '64' is out of range;
//   accepted: an integer from 1 to 32       (one line in the message)
//
// Mapping: YAML maps fill messages (keys are the proto field names), sequences fill
// repeated fields (a sequence replaces the field's previous contents), scalars fill
// integer, floating-point, bool ("true"/"false"), string/bytes and enum fields. Enum
// values are accepted by name, case-insensitively, with or without the prefix derived
// from the enum's type name (SimFault: "pfc_storm", "PFC_STORM" and
// "SIM_FAULT_PFC_STORM" all name SIM_FAULT_PFC_STORM). A null value (`key:` or `~`)
// on a message field, or an empty document, means "no overrides"; on any other field
// it is an error. Quoting does not change how a scalar is read ('8' is a fine integer).
// A string field's value must be UTF-8 (proto3 strings are: anything else would not
// survive the wire); a bytes field takes any bytes.
// Integers are decimal only. A file holding more than one YAML document is refused.
// Proto map fields are not supported and are rejected when they appear.
//
// Rules checked while loading: min/max and non_empty, each where the value appears.
// `required` is checked only by ValidateRules, since a command-line flag may still
// supply the field after the file is loaded.
//
// yaml-cpp's exceptions never leave this module. All functions are thread-safe for
// distinct messages.
//
// Example:
//   weft::v1::AgentConfig config = DefaultAgentConfig();
//   RETURN_IF_ERROR(MergeYamlFile("/etc/weft/agent.yaml", &config));
//   ... apply flags ...
//   RETURN_IF_ERROR(ValidateRules(config, "agent config"));
#ifndef WEFT_COMMON_YAML_PROTO_H_
#define WEFT_COMMON_YAML_PROTO_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace weft {

// Merges the YAML document `yaml` into `*msg`. `source_name` (usually the file's path)
// starts every error message. On error `*msg` may be partly merged: discard it.
absl::Status MergeYamlString(absl::string_view yaml, absl::string_view source_name,
                             google::protobuf::Message* msg);

// Reads the file at `path` and merges it as MergeYamlString does, naming it `path` in
// errors. NOT_FOUND, with the path and the system's reason, when it cannot be read.
absl::Status MergeYamlFile(absl::string_view path, google::protobuf::Message* msg);

// Checks every (weft.v1.rule) of an already-built message, recursing into set
// submessages and into every element of repeated fields:
//   - required: a message field must be set, a repeated field non-empty, a string
//     non-empty, a field with explicit presence set, any other scalar non-zero;
//   - min/max: inclusive range of numeric values (each element of a repeated field);
//   - non_empty: a string (each element of a repeated string) must not be empty.
// Returns the first violation as INVALID_ARGUMENT, e.g.
//   agent config: field 'simulated.nics': value '64' is out of range; accepted: an
//   integer from 1 to 32
// where `context` ("agent config") starts the message; it is omitted when empty.
absl::Status ValidateRules(const google::protobuf::Message& msg,
                           absl::string_view context);

}  // namespace weft

#endif  // WEFT_COMMON_YAML_PROTO_H_
