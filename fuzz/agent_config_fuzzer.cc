// Fuzzes loading the agent's YAML config from bytes (common/daemon_config.h,
// common/yaml_proto.h); see config_properties.h for what is checked.
#include <cstddef>
#include <cstdint>

#include "common/daemon_config.h"
#include "fuzz/config_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  weft::fuzz::CheckConfigLoad(data, size, weft::DefaultAgentConfig(),
                              &weft::ValidateAgentConfig);
  return 0;
}
