// `conveyord doctor` and `conveyor-doctor`: the environment checklist of a GPU host as a
// command (docs/DESIGN.md, Environment checks). Free of gRPC, FFmpeg and spdlog so it runs as built on the
// GPU host. RunDoctor prints one line per check and returns the process exit code
// (doctor_report.h: 0 usable, 1 blocked, 3 no GPU backend, 4 no device).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "doctor_report.h"
#include "status.h"

namespace conveyor::doctor {

struct DoctorOptions {
  size_t bandwidth_bytes = size_t{64} << 20;  // size of each bandwidth and overlap copy
  int reps = 5;                               // timed repetitions per measurement (best is kept)
  int device = 0;                             // the device the copy checks run on
  bool json = false;                          // also print one machine-readable line at the end
  Expect expect = Expect::kNone;              // --expect cpu|gpu: what the exit code judges
};

// Parses doctor arguments (argv without the program name, and without "doctor" for
// conveyord): --bytes N[K|M|G], --reps N, --device N, --expect cpu|gpu, --json, --help
// (sets *help).
StatusOr<DoctorOptions> ParseDoctorArgs(const std::vector<std::string>& args, bool* help);

// "64M", "1G", "4096", "512k" -> bytes (binary multiples).
StatusOr<size_t> ParseByteSize(const std::string& text);

// The --help text.
std::string DoctorUsage(const std::string& program);

// Runs every check, prints the checklist to `out`, returns the exit code.
int RunDoctor(const DoctorOptions& options, std::ostream& out);

// The whole command: parses `args`, prints usage errors and --help for `program`, runs
// the checks on stdout. `conveyor-doctor` and `conveyord doctor` are this.
int DoctorMain(const std::string& program, const std::vector<std::string>& args);

}  // namespace conveyor::doctor
