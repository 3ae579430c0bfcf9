// `weft-agent inspect`: discover the node and read every counter once, print the
// snapshot (agent/inspect.h) as a table or JSON, exit. Needs no controller and no node
// name; without --config or --backend it reads the real node (the linux backend).
// Called from agent/main.cc on the main thread.
#ifndef WEFT_AGENT_INSPECT_COMMAND_H_
#define WEFT_AGENT_INSPECT_COMMAND_H_

#include "agent/command_line.h"

namespace weft::agent {

// The process exit status: 0 printed; 2 a bad flag or config ("weft-agent inspect:
// ..." on stderr); 1 the node could not be read.
int RunInspect(AgentCommandLine command_line);

}  // namespace weft::agent

#endif  // WEFT_AGENT_INSPECT_COMMAND_H_
