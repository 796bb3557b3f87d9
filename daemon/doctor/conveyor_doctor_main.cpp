// conveyor-doctor: `conveyord doctor` as a standalone binary with no gRPC, FFmpeg or
// spdlog, so it runs on a GPU host that has none of them.
#include <string>
#include <vector>

#include "doctor.h"

int main(int argc, char** argv) {
  return conveyor::doctor::DoctorMain("conveyor-doctor", std::vector<std::string>(argv + 1, argv + argc));
}
