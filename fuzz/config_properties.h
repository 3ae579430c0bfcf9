// The properties the daemon-config fuzzers check, shared by the controller's and the
// agent's: loading YAML bytes as LoadControllerConfig / LoadAgentConfig do after
// reading the file (embedded defaults, MergeYamlString, then Validate*).
//   - a refusal is INVALID_ARGUMENT and starts with the source name, as
//     common/yaml_proto.h promises (file:line:column);
//   - a document that loads is idempotent: merging it again over the result changes
//     nothing (sequences replace, scalars overwrite, maps merge);
//   - validation either accepts or says why, with INVALID_ARGUMENT.
#ifndef WEFT_FUZZ_CONFIG_PROPERTIES_H_
#define WEFT_FUZZ_CONFIG_PROPERTIES_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "common/yaml_proto.h"
#include "fuzz/fuzz_check.h"
#include "google/protobuf/util/message_differencer.h"

namespace weft::fuzz {

inline constexpr char kSourceName[] = "fuzz.yaml";

template <typename Config>
void CheckConfigLoad(const uint8_t* data, size_t size, Config defaults,
                     absl::Status (*validate)(const Config&)) {
  const absl::string_view yaml(reinterpret_cast<const char*>(data), size);
  Config config = defaults;
  const absl::Status merged = MergeYamlString(yaml, kSourceName, &config);
  if (!merged.ok()) {
    FUZZ_CHECK(merged.code() == absl::StatusCode::kInvalidArgument) << merged;
    FUZZ_CHECK(absl::StartsWith(merged.message(), kSourceName)) << merged;
    return;
  }
  Config again = config;
  const absl::Status remerged = MergeYamlString(yaml, kSourceName, &again);
  FUZZ_CHECK(remerged.ok()) << remerged;
  FUZZ_CHECK(google::protobuf::util::MessageDifferencer::Equals(config, again))
      << "merging twice changed the config:\n"
      << config.DebugString() << "\nvs\n"
      << again.DebugString();
  const absl::Status valid = validate(config);
  if (!valid.ok()) {
    FUZZ_CHECK(valid.code() == absl::StatusCode::kInvalidArgument) << valid;
    FUZZ_CHECK(!valid.message().empty());
  }
}

}  // namespace weft::fuzz

#endif  // WEFT_FUZZ_CONFIG_PROPERTIES_H_
