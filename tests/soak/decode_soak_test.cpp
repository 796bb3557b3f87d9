// The decode soak: the real conveyord on a GPU worker under 32 concurrent container
// clients that mix decode gpu (the video engines), cpu and auto, a quarter of them
// cancelling part way, for a bounded time; then it checks that the engines' decoders gave
// nothing less back than they took: no decoded surface still held, the worker's device
// memory and the GPU's memory in use (nvidia-smi) where they were after the warm-up, and
// the daemon's RSS within its bound.
//
// How, and why so:
// - References: each clip runs alone with decode cpu (FFmpeg's software decoder) first.
//   H.264 and HEVC decoding are exact, so every session, whichever decoder it got, must
//   give the same JPEG bytes and pts, frame for frame (a cancelled one a prefix of them).
// - Clips: 1080p H.264 and HEVC, which the engines take, and a 640x360 H.264 4:4:4 stream,
//   which they do not (auto decodes it on the CPU; gpu clients never pick it). Made with the
//   ffmpeg CLI, or read from CONVEYOR_DECODE_SOAK_MEDIA (a folder holding the three files
//   tests/gpu/h200_bundle/stage_soak.sh makes with the same commands) on a host without it.
// - Clients: thread t asks for gpu, cpu or auto by t % 3; threads with t % 4 == 3 cancel
//   after a random number of frames, from right after Started to half the clip.
// - Leaks: the baseline is taken once a warm-up of the same mix has ended and the idle
//   daemon has released its free heap. After the soak, conveyor_decoder_surface_bytes
//   must be 0 (a frame on its way to the encoder holds its surface), and so must
//   conveyor_decoders_retired (closed decoders waiting for their teardown), the worker's device
//   memory and pinned memory in use as after the warm-up, and the GPU's memory in use
//   (nvidia-smi, the daemon being alone on the GPU) within 64 MiB of it: one 1080p
//   decoder's surfaces alone are about 75 MiB (25 NV12 surfaces of 3 MiB), so a decoder
//   not closed shows. The RSS must be within CONVEYOR_SOAK_RSS_TOLERANCE_PCT (10) % of its
//   baseline: one warm-up round, where the fault soak takes the higher of two.
// - Both decoders must have been used: conveyor_decode_sessions_total{decoder="gpu"} and
//   {decoder="cpu"} both grow, and no session fails over for an engine error.
// - CONVEYOR_DECODE_SOAK_SECONDS (60) and CONVEYOR_DECODE_SOAK_WARMUP_SECONDS (30) set the
//   lengths. On a daemon without a GPU worker (CI) the test skips, saying so.
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "daemon_probe.h"
#include "daemon_process.h"
#include "soak_clients.h"
#include "stream_specs.h"
#include "transcode_client.h"

namespace conveyor::soak {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kDecodeClients = 32;
constexpr double kGpuMemorySlackMiB = 64;

double EnvSeconds(const char* name, double fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atof(v) : fallback;
}

struct Clip {
  const char* file;
  const char* ffmpeg_args;  // after the lavfi input
  const char* size;
  bool engines;             // the video engines take it
};

// 60 frames of noisy 1080p30 (about 8 Mbit/s, as a camera's), and the 4:4:4 stream.
constexpr Clip kClips[] = {
    {"h264_1080.mp4", "-c:v libx264 -preset fast -crf 23 -pix_fmt yuv420p", "1920x1080", true},
    {"hevc_1080.mkv", "-c:v libx265 -x265-params log-level=error -crf 26 -pix_fmt yuv420p", "1920x1080", true},
    {"h264_444_640x360.mkv", "-c:v libx264 -preset fast -pix_fmt yuv444p", "640x360", false},
};

StreamSpec ClipStream(const std::string& path, const char* file, v1::Decode decode) {
  StreamSpec spec;
  spec.name = std::string(file) + ", decode " + v1::Decode_Name(decode);
  spec.job.mutable_container();
  spec.job.set_decode(decode);
  v1::RenditionSpec* r = spec.job.add_renditions();
  r->set_quality(85);
  r->set_subsampling(v1::SUBSAMPLING_420);
  spec.container_path = path;
  spec.chunk = 256 << 10;
  return spec;
}

// The GPU's memory in use, MiB, from nvidia-smi; -1 without it (an AMD host).
double GpuMemoryUsedMiB() {
  const char* device = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string cmd = std::string("nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i ") +
                          (device != nullptr && *device != '\0' ? device : "0") + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return -1;
  char line[64] = {};
  const bool got = std::fgets(line, sizeof line, p.get()) != nullptr;
  const int rc = pclose(p.release());  // its exit status
  return got && rc == 0 ? std::atof(line) : -1;
}

struct Mix {
  std::mutex mu;
  std::vector<SessionRecord> records;
};

// kDecodeClients threads looping for `seconds`: decode by thread, cancels on a quarter.
void RunDecodeMix(const ClientEnv& env, const std::vector<std::vector<StreamSpec>>& specs,
                  const std::vector<Reference>& refs, double seconds, uint32_t seed, Mix* mix) {
  const Clock::time_point end =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  std::vector<std::thread> clients;
  for (int t = 0; t < kDecodeClients; ++t) {
    clients.emplace_back([&, t] {
      std::mt19937 rng(seed * 1000 + t);
      const int mode = t % 3;  // specs[clip][mode]: gpu, cpu, auto
      while (Clock::now() < end) {
        size_t c = rng() % specs.size();
        while (mode == 0 && !kClips[c].engines) c = rng() % specs.size();
        SessionRecord r = t % 4 == 3
                              ? RunCancellingClient(env, specs[c][mode], refs[c], rng() % (refs[c].total_frames() / 2 + 1))
                              : RunGoodClient(env, specs[c][mode], refs[c]);
        std::lock_guard<std::mutex> lock(mix->mu);
        mix->records.push_back(std::move(r));
      }
    });
  }
  for (std::thread& c : clients) c.join();
}

double Series(const std::map<std::string, double>& m, const std::string& name) {
  const auto it = m.find(name);
  return it == m.end() ? 0 : it->second;
}

TEST(Soak, DecodeMixOnTheVideoEnginesAndTheCpuLeavesNothingHeld) {
  const double soak_s = EnvSeconds("CONVEYOR_DECODE_SOAK_SECONDS", 60);
  const double warmup_s = EnvSeconds("CONVEYOR_DECODE_SOAK_WARMUP_SECONDS", 30);
  const double rss_tolerance_pct = EnvSeconds("CONVEYOR_SOAK_RSS_TOLERANCE_PCT", 10);

  e2e::DaemonProcess daemon({"--max-sessions", std::to_string(kDecodeClients), "--metrics-listen", "127.0.0.1:0"});
  ASSERT_TRUE(daemon.ready()) << "conveyord did not start";
  auto stub = NewClientStub(daemon.target());
  const StatusOr<v1::ServerStatus> started = GetServerStatus(stub.get());
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  ASSERT_GT(started->workers_size(), 0);
  if (started->workers(0).backend() == "cpu") {
    GTEST_SKIP() << "the daemon has a CPU worker and no video engines: the decode soak runs on the GPU host "
                    "(CONVEYOR_E2E_WORKERS=gpu, tests/gpu/h200_bundle/run_soak.sh)";
  }
  const int metrics_port = daemon.metrics_port();
  ASSERT_GT(metrics_port, 0);

  const char* ready = std::getenv("CONVEYOR_DECODE_SOAK_MEDIA");
  const std::string media = ready != nullptr && *ready != '\0' ? ready : e2e::MakeTempDir();
  std::vector<std::vector<StreamSpec>> specs;
  for (const Clip& clip : kClips) {
    const std::string path = media + "/" + clip.file;
    if (ready == nullptr || *ready == '\0') {
      // tests/gpu/h200_bundle/stage_soak.sh makes the clips with these same commands.
      ASSERT_EQ(e2e::Shell(std::string("ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=") + clip.size +
                           ":rate=30,noise=alls=6:allf=t -frames:v 60 " + clip.ffmpeg_args + " " + path),
                0);
    }
    ASSERT_FALSE(e2e::ReadFile(path).empty()) << "no clip at " << path;
    specs.push_back({ClipStream(path, clip.file, v1::DECODE_GPU), ClipStream(path, clip.file, v1::DECODE_CPU),
                     ClipStream(path, clip.file, v1::DECODE_AUTO)});
  }

  // The references: each clip alone, on FFmpeg's software decoder.
  std::vector<Reference> refs;
  for (const std::vector<StreamSpec>& clip : specs) {
    auto ref_stub = NewClientStub(daemon.target());
    e2e::TranscodeCall call;
    call.spec = clip[1].job;
    call.send_input = [&](e2e::TranscodeStream* s) { return SendStream(s, clip[1], 0, false); };
    const e2e::TranscodeOutcome out = e2e::RunTranscode(ref_stub.get(), call);
    ASSERT_TRUE(out.status.ok()) << clip[1].name << ": " << out.status.error_message();
    ASSERT_EQ(out.frames.at(0).size(), 60u) << clip[1].name;
    Reference ref;
    ref.frames = out.frames;
    ref.pts = out.pts;
    refs.push_back(std::move(ref));
  }

  ClientEnv env;
  env.target = daemon.target();
  env.idle_timeout_s = 30;
  Mix mix;
  const auto quiet_and_released = [&](const char* after) {
    StatusOr<std::map<std::string, double>> busy = ScrapeMetrics(metrics_port);
    const double releases = busy.ok() ? Series(*busy, "conveyor_idle_heap_releases_total") : 0;
    const StatusOr<v1::ServerStatus> quiet = WaitForQuiet(stub.get(), 60);
    EXPECT_TRUE(quiet.ok()) << after << ": " << quiet.status().ToString();
    EXPECT_TRUE(WaitForHeapRelease(metrics_port, releases, 15)) << "no heap release after " << after;
  };
  RunDecodeMix(env, specs, refs, warmup_s, 1, &mix);
  quiet_and_released("the warm-up");
  const size_t warmup_sessions = mix.records.size();
  const uint64_t rss_before = SettledRss(daemon);
  const double gpu_before = GpuMemoryUsedMiB();
  StatusOr<std::map<std::string, double>> before = ScrapeSeries(metrics_port);
  ASSERT_TRUE(before.ok()) << before.status().ToString();

  const Clock::time_point soak_start = Clock::now();
  RunDecodeMix(env, specs, refs, soak_s, 2, &mix);
  const double soak_wall_s = std::chrono::duration<double>(Clock::now() - soak_start).count();
  quiet_and_released("the soak");
  const uint64_t rss_after = SettledRss(daemon);
  const double gpu_after = GpuMemoryUsedMiB();
  StatusOr<std::map<std::string, double>> after = ScrapeSeries(metrics_port);
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  const std::map<std::string, double> family_before = SumByFamily(*before), family_after = SumByFamily(*after);

  size_t problems = 0, good = 0, cancels = 0, frames = 0;
  for (size_t i = 0; i < mix.records.size(); ++i) {
    const SessionRecord& r = mix.records[i];
    if (i >= warmup_sessions) {  // the summary counts the soak's sessions; a problem fails either round
      (r.role == Role::kGood ? good : cancels)++;
      frames += r.frames;
    }
    if (!r.problem.empty() && ++problems <= 20) {
      ADD_FAILURE() << RoleName(r.role) << " session (" << r.what << "): " << r.problem;
    }
  }
  const auto delta = [&](const std::string& name) { return Series(*after, name) - Series(*before, name); };
  const double gpu_sessions = delta("conveyor_decode_sessions_total{decoder=\"gpu\"}");
  const double cpu_sessions = delta("conveyor_decode_sessions_total{decoder=\"cpu\"}");
  const double gpu_frames = delta("conveyor_decode_duration_seconds_count{decoder=\"gpu\"}");
  const double cpu_frames = delta("conveyor_decode_duration_seconds_count{decoder=\"cpu\"}");
  std::printf("\ndecode soak: %d clients, warm-up %.0f s (%zu sessions), soak %.1f s (%zu sessions: %zu whole, "
              "%zu cancelled; %zu frames received)\n",
              kDecodeClients, warmup_s, warmup_sessions, soak_wall_s, mix.records.size() - warmup_sessions, good,
              cancels, frames);
  std::printf("  decoders      soak: gpu %.0f sessions / %.0f frames, cpu %.0f sessions / %.0f frames; "
              "failovers: error %.0f, format %.0f, balance %.0f\n",
              gpu_sessions, gpu_frames, cpu_sessions, cpu_frames,
              delta("conveyor_decode_failovers_total{reason=\"error\"}"),
              delta("conveyor_decode_failovers_total{reason=\"format\"}"),
              delta("conveyor_decode_failovers_total{reason=\"balance\"}"));
  std::printf("  held after    decoder surfaces %.0f B, retired decoders %.0f, worker device memory %.0f B (%.0f B "
              "before), pinned in use %.0f B\n",
              Series(family_after, "conveyor_decoder_surface_bytes"), Series(family_after, "conveyor_decoders_retired"),
              Series(family_after, "conveyor_device_memory_used_bytes"),
              Series(family_before, "conveyor_device_memory_used_bytes"),
              Series(family_after, "conveyor_pinned_memory_in_use_bytes"));
  std::printf("  GPU memory    %.0f MiB in use after the warm-up, %.0f MiB after the soak (nvidia-smi)\n",
              gpu_before, gpu_after);
  std::printf("  RSS           %.1f MiB after the warm-up, %.1f MiB after the soak (%+.1f %%)\n\n",
              rss_before / 1048576.0, rss_after / 1048576.0, 100.0 * (double(rss_after) / rss_before - 1));

  EXPECT_EQ(problems, 0u) << "sessions that did not go as they should";
  EXPECT_GT(gpu_sessions, 0) << "no session decoded on the video engines";
  EXPECT_GT(cpu_sessions, 0) << "no session decoded on the CPU";
  EXPECT_EQ(delta("conveyor_decode_failovers_total{reason=\"error\"}"), 0) << "an engine error moved a session";
  EXPECT_EQ(Series(family_after, "conveyor_sessions_active"), 0);
  EXPECT_EQ(Series(family_after, "conveyor_decoder_surface_bytes"), 0) << "decoded surfaces still held";
  EXPECT_EQ(Series(family_after, "conveyor_decoders_retired"), 0) << "closed decoders never torn down";
  EXPECT_EQ(Series(family_after, "conveyor_pinned_memory_in_use_bytes"), 0);
  EXPECT_EQ(Series(family_after, "conveyor_device_memory_used_bytes"),
            Series(family_before, "conveyor_device_memory_used_bytes"));
  if (gpu_before < 0 || gpu_after < 0) {
    std::printf("decode soak: no nvidia-smi; the GPU's memory is checked through the daemon's gauges only\n");
  } else {
    EXPECT_LE(gpu_after, gpu_before + kGpuMemorySlackMiB) << "the GPU's memory in use grew over the soak";
  }
  EXPECT_LE(static_cast<double>(rss_after), rss_before * (1 + rss_tolerance_pct / 100))
      << "RSS did not return to within " << rss_tolerance_pct << " % of its baseline";
  EXPECT_EQ(daemon.Stop(), 0) << "conveyord did not exit cleanly on SIGTERM";
  if (ready == nullptr || *ready == '\0') e2e::Shell("rm -rf '" + media + "'");
}

}  // namespace
}  // namespace conveyor::soak
