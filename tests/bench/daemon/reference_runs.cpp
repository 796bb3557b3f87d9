// conveyor-bench-daemon's same-run references (see reference_runs.h).
#include "reference_runs.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

namespace conveyor::bench {

using Clock = std::chrono::steady_clock;

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

double RusageCpuSeconds(int who) {
  rusage u{};
  getrusage(who, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end_of_name = stat.rfind(')');
  if (end_of_name == std::string::npos) return 0;
  std::istringstream fields(stat.substr(end_of_name + 2));  // from field 3, the state
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

CommandRun RunTimed(const std::string& command) {
  CommandRun run;
  const double cpu0 = RusageCpuSeconds(RUSAGE_CHILDREN);
  const auto t0 = Clock::now();
  run.ok = std::system(command.c_str()) == 0;
  run.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  run.cpu_s = RusageCpuSeconds(RUSAGE_CHILDREN) - cpu0;
  return run;
}

FfmpegRun RunFfmpegCli(const std::string& input, int q, int threads) {
  const std::string log = "/tmp/conveyor-bench-ffmpeg.log";
  const std::string cmd = "ffmpeg -hide_banner -nostdin -y " +
                          (threads > 0 ? "-threads " + std::to_string(threads) + " " : std::string()) + "-i '" +
                          input + "' -an -c:v mjpeg -q:v " + std::to_string(q) + " -f mjpeg /dev/null 2> " + log;
  const double cpu0 = RusageCpuSeconds(RUSAGE_CHILDREN);
  const auto t0 = Clock::now();
  const int rc = std::system(cmd.c_str());
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = RusageCpuSeconds(RUSAGE_CHILDREN) - cpu0;
  FfmpegRun run;
  run.q = q;
  if (rc != 0) return run;
  const std::vector<uint8_t> text = ReadAll(log);
  const std::string s(text.begin(), text.end());
  std::smatch m;
  double frames = 0, kib = 0;
  const std::regex frame_re(R"(frame=\s*(\d+))");
  for (std::sregex_iterator it(s.begin(), s.end(), frame_re), end; it != end; ++it) {
    frames = std::stod((*it)[1]);  // the last progress line has the total
  }
  if (std::regex_search(s, m, std::regex(R"(video:(\d+)kB)"))) kib = std::stod(m[1]);
  if (frames > 0) {
    run.fps = frames / wall;
    run.bytes_per_frame = kib * 1024 / frames;
    run.cpu_ms_per_frame = 1e3 * cpu / frames;
  }
  return run;
}

FfmpegRun RunLibav(const std::string& bin, const std::string& input, int q, int threads) {
  const std::string log = "/tmp/conveyor-bench-libav.log";
  const std::string cmd = "'" + bin + "' --input '" + input + "' --q " + std::to_string(q) + " --decoder-threads " +
                          std::to_string(threads) + " > " + log + " 2>&1";
  const double cpu0 = RusageCpuSeconds(RUSAGE_CHILDREN);
  const auto t0 = Clock::now();
  const int rc = std::system(cmd.c_str());
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = RusageCpuSeconds(RUSAGE_CHILDREN) - cpu0;
  FfmpegRun run;
  run.q = q;
  const std::vector<uint8_t> text = ReadAll(log);
  const std::string s(text.begin(), text.end());
  if (rc != 0) {
    std::fprintf(stderr, "conveyor-bench-daemon: %s failed: %s\n", bin.c_str(), s.c_str());
    return run;
  }
  std::smatch frames, bytes, seconds;
  if (!std::regex_search(s, frames, std::regex(R"("frames":(\d+))")) ||
      !std::regex_search(s, bytes, std::regex(R"("bytes":(\d+))")) ||
      !std::regex_search(s, seconds, std::regex(R"("seconds":([0-9.]+))"))) {
    return run;
  }
  const double n = std::stod(frames[1]);
  if (n > 0) {
    run.fps = n / wall;
    run.bytes_per_frame = std::stod(bytes[1]) / n;
    run.inner_fps = std::stod(seconds[1]) > 0 ? n / std::stod(seconds[1]) : 0;
    run.cpu_ms_per_frame = 1e3 * cpu / n;
  }
  return run;
}

DecodeRun RunLibavDecode(const std::string& bin, const std::string& input, int streams, const std::string& decoder) {
  const std::string log = "/tmp/conveyor-bench-libav-decode.log";
  const std::string cmd = "'" + bin + "' --input '" + input + "' --streams " + std::to_string(streams) +
                          " --decoder " + decoder + " > " + log + " 2>&1";
  const auto t0 = Clock::now();
  const int rc = std::system(cmd.c_str());
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  DecodeRun run;
  const std::vector<uint8_t> text = ReadAll(log);
  const std::string s(text.begin(), text.end());
  std::smatch frames, fps, cpu;
  if (rc != 0 || !std::regex_search(s, frames, std::regex(R"("frames":(\d+))")) ||
      !std::regex_search(s, fps, std::regex(R"("fps":([0-9.]+))")) ||
      !std::regex_search(s, cpu, std::regex(R"("cpu_ms_per_frame":([0-9.]+))"))) {
    run.error = s.empty() ? "it failed and printed nothing" : s;
    while (!run.error.empty() && run.error.back() == '\n') run.error.pop_back();
    return run;
  }
  run.ok = true;
  run.frames = std::stoull(frames[1]);
  run.fps = std::stod(fps[1]);
  run.process_fps = wall > 0 ? run.frames / wall : 0;
  run.cpu_ms_per_frame = std::stod(cpu[1]);
  return run;
}

}  // namespace conveyor::bench
