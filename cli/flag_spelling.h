// Flag spelling for weftctl: Abseil flags are named with underscores (--gpus_per_node),
// while operators and the docs write dashes (--gpus-per-node). UnderscoreFlagNames
// rewrites the name part of each flag argument so both spellings work. Pure function;
// thread-safe.
#ifndef WEFT_CLI_FLAG_SPELLING_H_
#define WEFT_CLI_FLAG_SPELLING_H_

#include <string>
#include <vector>

namespace weft {

// `args` (argv without argv[0]) with '-' turned into '_' in the name of every flag
// argument: "--gpus-per-node=8" -> "--gpus_per_node=8", "-one-pod" -> "-one_pod".
// Only arguments that start with "-" or "--" followed by a letter are flags; the part
// after the first '=' is left alone, and so is everything after a bare "--" (the end
// of flags) and every other argument (values such as "gpu-a01" or "-0.5"). A value
// given as a separate argument that itself looks like a dashed flag ("--reason
// -swap-nic") is rewritten too; write it as "--reason=-swap-nic".
std::vector<std::string> UnderscoreFlagNames(const std::vector<std::string>& args);

}  // namespace weft

#endif  // WEFT_CLI_FLAG_SPELLING_H_
