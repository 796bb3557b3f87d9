// conveyorctl: the command-line client of conveyord (status, sessions, cancel,
// transcode). Everything but the streams it writes to, and dying of a signal that
// interrupted it, lives in cli.cpp.
#include <csignal>
#include <iostream>

#include "cli.h"

int main(int argc, char** argv) {
  // A reader of stdout that goes away (`conveyorctl ... -o - | head`) is a failed write,
  // reported and cleaned up like any other, as the ffmpeg CLI reports "Broken pipe";
  // not a silent death by SIGPIPE mid-call.
  std::signal(SIGPIPE, SIG_IGN);
  std::ios::sync_with_stdio(false);
  const int rc = conveyor::ctl::RunConveyorctl(argc, argv, std::cout, std::cerr);
  if (rc > conveyor::ctl::kExitSignalBase) {
    // Output cleaned up: now end as the signal would have, so that a shell running a
    // loop of conveyorctl stops at an interrupt instead of going on to the next.
    std::cout.flush();
    std::cerr.flush();
    std::signal(rc - conveyor::ctl::kExitSignalBase, SIG_DFL);
    std::raise(rc - conveyor::ctl::kExitSignalBase);
  }
  return rc;
}
