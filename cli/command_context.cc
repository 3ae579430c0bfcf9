#include "cli/command_context.h"

namespace weft {

int PrintUsageError(std::ostream& err, absl::string_view usage, absl::string_view problem) {
  err << "weftctl: " << problem << "\n\nusage: " << usage << "\n";
  return kExitUsage;
}

int CommandContext::Usage(absl::string_view problem) const {
  return PrintUsageError(err, usage, problem);
}

int CommandContext::Failed(absl::string_view what, const absl::Status& status) const {
  err << "weftctl: " << what << ": " << status.message() << "\n";
  return kExitFailed;
}

}  // namespace weft
