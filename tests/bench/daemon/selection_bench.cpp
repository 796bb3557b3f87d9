// conveyor-bench-selection: what frame selection saves, through conveyord and through the
// ffmpeg CLI on the same file and host, in the same run (best of --repeat runs each):
//   - keyframes only (JobSpec.keyframes_only; `ffmpeg -skip_frame nokey -i IN -vsync 0
//     -f image2`) against decoding every frame and keeping one a GOP (JobSpec.frame_rate
//     1/GOP; `ffmpeg -i IN -vf fps=1/GOP -f image2`), so that both sides write about as
//     many JPEGs: wall time, JPEGs, input seconds decoded a second, CPU a JPEG;
//   - a seek: the first frame at --seek seconds (start_seconds with max_frames 1; `ffmpeg
//     -ss S -i IN -frames:v 1`), on a seekable input (ContainerRange runs answering the
//     daemon's ReadRequests, as conveyorctl sends a regular file) and a streamed one
//     (decoded from its start: the input is a faststart MP4, which the daemon does not
//     spool): time to the first JPEG.
// conveyord's CPU is its process's (all threads), the CLI's that of its process; the
// client's own CPU is printed beside. Input: a long H.264 file (the benchmark's is 10
// minutes of 1080p25 with a 250-frame GOP; --make-input writes it with the ffmpeg CLI).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench_daemon.h"
#include "daemon_session.h"
#include "reference_runs.h"

namespace conveyor::bench {
namespace {

struct Options {
  std::string conveyord;
  std::string input;
  bool make_input = false;
  double duration_s = 600;
  double gop_seconds = 10;
  double seek_s = 60;
  int repeat = 3;
  std::vector<std::string> daemon_args;
};

// One way of getting the JPEGs, best of the repeats by wall time.
struct Measured {
  std::string name;
  bool ok = false;
  double wall_s = 0, cpu_s = 0, client_cpu_s = 0, first_s = 0;
  uint64_t jpegs = 0, frames_in = 0;
};

// 60, 0.5: seconds as a person writes them.
std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

void Keep(Measured* best, const Measured& m) {
  if (!m.ok) return;
  if (!best->ok || m.wall_s < best->wall_s) *best = m;
}

Measured ThroughDaemon(const std::string& name, const BenchDaemon& daemon, const DaemonBenchOptions& o,
                       const std::vector<uint8_t>& input) {
  Measured m;
  m.name = name;
  const double cpu0 = ProcessCpuSeconds(daemon.pid);
  const double client0 = RusageCpuSeconds(RUSAGE_SELF);
  const auto t0 = std::chrono::steady_clock::now();
  const SessionResult r = RunSession(daemon.stub.get(), o, input, 0, 0);
  m.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.cpu_s = ProcessCpuSeconds(daemon.pid) - cpu0;
  m.client_cpu_s = RusageCpuSeconds(RUSAGE_SELF) - client0;
  if (!r.status.ok()) {
    std::fprintf(stderr, "%s: %s %s\n", name.c_str(), r.status.error_message().c_str(), r.failure.c_str());
    return m;
  }
  m.ok = true;
  m.jpegs = r.frames;
  m.first_s = r.first_frame_s;
  return m;
}

Measured ThroughCli(const std::string& name, const std::string& args, const std::string& dir) {
  Measured m;
  m.name = name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const CommandRun run = RunTimed("ffmpeg -hide_banner -nostdin -loglevel error -y " + args + " -q:v 3 '" + dir +
                                  "/%06d.jpg'");
  if (!run.ok) {
    std::fprintf(stderr, "%s: ffmpeg %s failed\n", name.c_str(), args.c_str());
    return m;
  }
  m.ok = true;
  m.wall_s = run.wall_s;
  m.cpu_s = run.cpu_s;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) m.jpegs += entry.is_regular_file() ? 1 : 0;
  m.first_s = run.wall_s;  // the CLI's first (and only, with -frames:v 1) JPEG is there when it exits
  return m;
}

void Print(const Measured& m, double input_s) {
  std::printf("%-44s %8.2f s %7llu %10.1f x %10.2f ms %10.2f ms\n", m.name.c_str(), m.wall_s,
              static_cast<unsigned long long>(m.jpegs), m.wall_s > 0 ? input_s / m.wall_s : 0,
              m.jpegs ? 1e3 * m.cpu_s / m.jpegs : 0, m.jpegs ? 1e3 * m.client_cpu_s / m.jpegs : 0);
}

int Run(const Options& opt) {
  if (opt.make_input && !std::filesystem::exists(opt.input)) {
    const int gop = static_cast<int>(opt.gop_seconds * 25 + 0.5);
    const std::string cmd = "ffmpeg -hide_banner -nostdin -loglevel error -y -f lavfi -i testsrc2=size=1920x1080:rate=25 "
                            "-t " + Seconds(opt.duration_s) + " -c:v libx264 -preset veryfast -g " +
                            std::to_string(gop) + " -keyint_min " + std::to_string(gop) +
                            " -sc_threshold 0 -pix_fmt yuv420p -movflags +faststart '" + opt.input + "'";
    std::printf("writing %s: %s\n", opt.input.c_str(), cmd.c_str());
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "conveyor-bench-selection: ffmpeg could not write %s\n", opt.input.c_str());
      return 1;
    }
  }
  const std::vector<uint8_t> input = ReadAll(opt.input);
  if (input.empty()) {
    std::fprintf(stderr, "conveyor-bench-selection: cannot read %s\n", opt.input.c_str());
    return 2;
  }
  BenchDaemon daemon;
  std::string error;
  if (!StartBenchDaemon(opt.conveyord, opt.daemon_args, &daemon, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const std::string scratch = daemon.dir + "/cli";
  const int fps_den = static_cast<int>(opt.gop_seconds * 1000 + 0.5);
  const std::string one_a_gop = "1000/" + std::to_string(fps_den);
  DaemonBenchOptions base;
  base.input = opt.input;
  base.quality = 85;
  DaemonBenchOptions keyframes = base, sampled = base, seek = base, seek_streamed = base;
  keyframes.keyframes_only = true;
  sampled.fps_num = 1000;
  sampled.fps_den = fps_den;
  seek.seekable = true;
  seek.start_seconds = opt.seek_s;
  seek.max_frames = 1;
  seek_streamed.start_seconds = opt.seek_s;
  seek_streamed.max_frames = 1;
  const std::string in = "'" + opt.input + "'";
  const std::string ss = Seconds(opt.seek_s);
  Measured ours_key, ours_all, cli_key, cli_all, ours_seek, ours_seek_streamed, cli_seek;
  ours_key.name = "conveyord keyframes_only";
  for (int i = 0; i < opt.repeat; ++i) {
    Keep(&ours_key, ThroughDaemon("conveyord keyframes_only", daemon, keyframes, input));
    Keep(&ours_all, ThroughDaemon("conveyord every frame, frame_rate " + one_a_gop, daemon, sampled, input));
    Keep(&cli_key, ThroughCli("ffmpeg -skip_frame nokey -vsync 0", "-skip_frame nokey -i " + in + " -vsync 0 -f image2",
                              scratch));
    Keep(&cli_all, ThroughCli("ffmpeg every frame, -vf fps=" + one_a_gop, "-i " + in + " -vf fps=" + one_a_gop +
                              " -f image2", scratch));
    Keep(&ours_seek, ThroughDaemon("conveyord start " + ss + " s, 1 frame, seekable", daemon, seek, input));
    Keep(&ours_seek_streamed, ThroughDaemon("conveyord start " + ss + " s, 1 frame, streamed", daemon, seek_streamed,
                                            input));
    Keep(&cli_seek, ThroughCli("ffmpeg -ss " + ss + " -i IN -frames:v 1", "-ss " + ss + " -i " + in +
                               " -frames:v 1 -f image2", scratch));
  }
  StopBenchDaemon(&daemon);
  for (const Measured* m : {&ours_key, &ours_all, &cli_key, &cli_all, &ours_seek, &ours_seek_streamed, &cli_seek}) {
    if (!m->ok) {
      std::fprintf(stderr, "conveyor-bench-selection: %s failed every time\n", m->name.c_str());
      return 1;
    }
  }
  std::printf("conveyor-bench-selection  %s (%.1f MiB), %.0f s, GOP %.1f s, worker %s, best of %d\n",
              opt.input.c_str(), input.size() / 1048576.0, opt.duration_s, opt.gop_seconds, daemon.worker.c_str(),
              opt.repeat);
  std::printf("%-44s %10s %7s %12s %13s %13s\n", "", "wall", "JPEGs", "realtime", "CPU a JPEG", "client CPU");
  for (const Measured* m : {&ours_key, &ours_all, &cli_key, &cli_all}) Print(*m, opt.duration_s);
  const double ours_speedup = ours_all.wall_s / ours_key.wall_s;
  const double cli_speedup = cli_all.wall_s / cli_key.wall_s;
  std::printf("keyframes only against every frame: conveyord %.1fx faster (CPU a JPEG %.1fx less), the ffmpeg CLI "
              "%.1fx; conveyord keyframes_only at %.2fx the CLI's -skip_frame nokey\n",
              ours_speedup, (ours_all.cpu_s / ours_all.jpegs) / (ours_key.cpu_s / ours_key.jpegs), cli_speedup,
              cli_key.wall_s / ours_key.wall_s);
  std::printf("%-44s %13s %13s\n", "", "first JPEG", "call");
  for (const Measured* m : {&ours_seek, &ours_seek_streamed}) {
    std::printf("%-44s %10.1f ms %10.1f ms\n", m->name.c_str(), 1e3 * m->first_s, 1e3 * m->wall_s);
  }
  std::printf("%-44s %10.1f ms %13s (the whole process, its start included)\n", cli_seek.name.c_str(),
              1e3 * cli_seek.first_s, "");
  std::printf("{\"bench\":\"selection\",\"keyframes_s\":%.3f,\"every_frame_s\":%.3f,\"speedup\":%.2f,"
              "\"cli_keyframes_s\":%.3f,\"cli_every_frame_s\":%.3f,\"cli_speedup\":%.2f,\"keyframes_jpegs\":%llu,"
              "\"keyframes_cpu_ms_per_jpeg\":%.2f,\"every_frame_cpu_ms_per_jpeg\":%.2f,\"cli_keyframes_cpu_ms_per_jpeg\":%.2f,"
              "\"seek_first_ms\":%.1f,\"seek_streamed_first_ms\":%.1f,\"cli_seek_ms\":%.1f}\n",
              ours_key.wall_s, ours_all.wall_s, ours_speedup, cli_key.wall_s, cli_all.wall_s, cli_speedup,
              static_cast<unsigned long long>(ours_key.jpegs), 1e3 * ours_key.cpu_s / ours_key.jpegs,
              1e3 * ours_all.cpu_s / ours_all.jpegs, 1e3 * cli_key.cpu_s / cli_key.jpegs, 1e3 * ours_seek.first_s,
              1e3 * ours_seek_streamed.first_s, 1e3 * cli_seek.first_s);
  return 0;
}

}  // namespace
}  // namespace conveyor::bench

int main(int argc, char** argv) {
  conveyor::bench::Options o;
  CLI::App app{"conveyor-bench-selection: keyframes only and a seek, conveyord against the ffmpeg CLI"};
  app.add_option("--conveyord", o.conveyord, "The conveyord binary to start")->required();
  app.add_option("--input", o.input, "A long H.264 file with a fixed GOP")->required();
  app.add_flag("--make-input", o.make_input,
               "Write --input first when it is missing: testsrc2 1920x1080 at 25 fps, libx264 veryfast, a GOP of "
               "--gop-seconds, --duration seconds long, a faststart MP4");
  app.add_option("--duration", o.duration_s, "The input's length in seconds (600)");
  app.add_option("--gop-seconds", o.gop_seconds, "The input's GOP in seconds (10: 250 frames at 25 fps)");
  app.add_option("--seek", o.seek_s, "Where the seek lands, in seconds (60)");
  app.add_option("--repeat", o.repeat, "Runs of each, best kept (3)")->check(CLI::PositiveNumber);
  app.add_option("--daemon-arg", o.daemon_args, "Extra conveyord flag (repeatable)");
  CLI11_PARSE(app, argc, argv);
  return conveyor::bench::Run(o);
}
