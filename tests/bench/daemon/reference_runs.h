// conveyor-bench-daemon's same-run references: ffmpeg's MJPEG encoder on the same input,
// through the ffmpeg CLI or conveyor-bench-libav-mjpeg, each timed as a whole process;
// the decode-only ceiling, conveyor-bench-libav-decode; and the two small helpers they
// share with the bench.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace conveyor::bench {

std::vector<uint8_t> ReadAll(const std::string& path);

// CPU seconds (user + system) from getrusage: RUSAGE_SELF, this client's threads, or
// RUSAGE_CHILDREN, children that have ended and been waited for (a reference run through
// std::system: the shell and the ffmpeg it waited for).
double RusageCpuSeconds(int who);

// CPU seconds (user + system, all threads) process `pid` has used: /proc/PID/stat fields
// 14 and 15. On a noisy host the CPU a frame costs moves less than frames/s does, because
// time the host gives to others is not counted.
double ProcessCpuSeconds(pid_t pid);

// A shell command, timed as a whole process: its wall time and the CPU it and its
// children used.
struct CommandRun {
  bool ok = false;  // exit status 0
  double wall_s = 0;
  double cpu_s = 0;
};
CommandRun RunTimed(const std::string& command);

// ffmpeg's MJPEG encoder on the same input: frames/s and bytes per frame at -q:v q. fps
// is over the process's wall time for either reference, so both pay their own start.
struct FfmpegRun {
  double fps = 0;
  double bytes_per_frame = 0;
  int q = 0;
  double inner_fps = 0;  // libav: over its own timed run, without the process start
  double cpu_ms_per_frame = 0;  // user + system of the reference process
};

FfmpegRun RunFfmpegCli(const std::string& input, int q, int threads);

// conveyor-bench-libav-mjpeg, which prints exact byte and frame counts in its JSON line.
FfmpegRun RunLibav(const std::string& bin, const std::string& input, int q, int threads);

// conveyor-bench-libav-decode with `streams` concurrent streams on `decoder` (cuda | cpu):
// the most frames/s the decoder alone gives on this input and host.
struct DecodeRun {
  bool ok = false;
  std::string error;      // what the program printed when it failed
  uint64_t frames = 0;
  double fps = 0;          // over its own timed run: the device is open, the file in memory
  double process_fps = 0;  // over the whole process, its start and the device's included
  double cpu_ms_per_frame = 0;  // its own getrusage over the timed run
};

DecodeRun RunLibavDecode(const std::string& bin, const std::string& input, int streams, const std::string& decoder);

}  // namespace conveyor::bench
