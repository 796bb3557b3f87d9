// conveyorctl's command line: the subcommands, their flags and exit codes, as one
// function that main() and the tests call.
#pragma once

#include <ostream>

namespace conveyor::ctl {

// Exit codes: 0 success; 1 the call or a local step failed, printed to `err` as
// "conveyorctl: CODE: message"; 2 a bad command line; 128 + N when signal N (SIGINT,
// SIGTERM, SIGHUP) interrupted a transcode, after its output was cleaned up. main()
// turns the last into death by that signal, so a calling shell sees the interrupt.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitSignalBase = 128;

int RunConveyorctl(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace conveyor::ctl
