// conveyorctl: the command-line client of conveyord (status, sessions, cancel,
// transcode). Everything but the streams it writes to lives in cli.cpp.
#include <iostream>

#include "cli.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  return conveyor::ctl::RunConveyorctl(argc, argv, std::cout, std::cerr);
}
