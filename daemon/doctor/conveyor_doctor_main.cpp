// conveyor-doctor: `conveyord doctor` as a standalone binary with no gRPC, FFmpeg or
// spdlog, so it runs on a GPU host that has none of them.
#include <iostream>
#include <string>
#include <vector>

#include "doctor.h"
#include "doctor_report.h"

int main(int argc, char** argv) {
  using namespace conveyor::doctor;
  const std::vector<std::string> args(argv + 1, argv + argc);
  bool help = false;
  auto options = ParseDoctorArgs(args, &help);
  if (!options.ok()) {
    std::cerr << "conveyor-doctor: " << options.status().message() << '\n' << DoctorUsage("conveyor-doctor");
    return kExitUsage;
  }
  if (help) {
    std::cout << DoctorUsage("conveyor-doctor");
    return kExitOk;
  }
  return RunDoctor(*options, std::cout);
}
