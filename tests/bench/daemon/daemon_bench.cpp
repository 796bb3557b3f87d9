// conveyor-bench-daemon: N concurrent Transcode streams against a conveyord it starts,
// reporting frames/s, per-frame latency (raw mode), time to first frame and the daemon's
// RSS, against ffmpeg's own MJPEG encoder on the same input and host, in the same run,
// at a matched output size. The reference is the ffmpeg CLI where there is one, or
// conveyor-bench-libav-mjpeg (the CLI's pipeline on libav* alone) on a host without it.
// Container input goes as chunks, or with --seekable as ContainerRange runs answering the
// daemon's ReadRequests (seekable_input.h); the bytes sent, the requests and the bytes the
// daemon spooled are printed too. --decode sets where the daemon decodes, and each run
// prints where the sessions said it did (Started.decoder); --decode-reference first runs
// conveyor-bench-libav-decode, the decoder alone at the same concurrency, as a ceiling. A
// separate binary from conveyor-bench, which must stay free of gRPC so that it runs on the
// GPU host as built.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "bench_daemon.h"
#include "daemon_session.h"
#include "reference_runs.h"
#include "test_process.h"

namespace conveyor::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Which program the reference numbers come from; printed with them.
enum class Reference { kNone, kFfmpegCli, kLibav };

uint64_t RssBytes(pid_t pid) { return testing::ProcessRssBytes(pid); }

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// auto: the ffmpeg CLI where it is on PATH, else the libav program where one was named.
Reference ChooseReference(const DaemonBenchOptions& o, bool have_ffmpeg) {
  if (o.reference == "ffmpeg") return Reference::kFfmpegCli;
  if (o.reference == "libav") return Reference::kLibav;
  if (o.reference == "none") return Reference::kNone;
  if (have_ffmpeg) return Reference::kFfmpegCli;
  return o.reference_bin.empty() ? Reference::kNone : Reference::kLibav;
}

int Run(const DaemonBenchOptions& o) {
  const bool have_ffmpeg = std::system("command -v ffmpeg >/dev/null 2>&1") == 0;
  const Reference reference = ChooseReference(o, have_ffmpeg);
  if (reference == Reference::kFfmpegCli && !have_ffmpeg) {
    std::fprintf(stderr, "conveyor-bench-daemon: --reference ffmpeg, but there is no ffmpeg on PATH\n");
    return 2;
  }
  if (reference == Reference::kLibav && access(o.reference_bin.c_str(), X_OK) != 0) {
    std::fprintf(stderr, "conveyor-bench-daemon: --reference libav needs --reference-bin, an executable "
                         "conveyor-bench-libav-mjpeg (got '%s')\n", o.reference_bin.c_str());
    return 2;
  }
  // The decoder alone first, before the daemon holds the device: cuda unless the daemon is
  // told to decode on the CPU.
  const std::string reference_decoder = o.decode == "cpu" ? "cpu" : "cuda";
  DecodeRun decode_ref;
  if (!o.decode_reference.empty()) {
    if (access(o.decode_reference.c_str(), X_OK) != 0) {
      std::fprintf(stderr, "conveyor-bench-daemon: --decode-reference needs an executable conveyor-bench-libav-decode "
                           "(got '%s')\n", o.decode_reference.c_str());
      return 2;
    }
    decode_ref = RunLibavDecode(o.decode_reference, o.input, o.sessions, reference_decoder);
    if (!decode_ref.ok) {
      std::fprintf(stderr, "conveyor-bench-daemon: the decode-only reference (%s --decoder %s) failed: %s\n",
                   o.decode_reference.c_str(), reference_decoder.c_str(), decode_ref.error.c_str());
      return 1;
    }
  }

  // Start the daemon on a socket of our own.
  BenchDaemon daemon;
  std::string error;
  if (!StartBenchDaemon(o.conveyord, o.daemon_args, &daemon, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  const pid_t pid = daemon.pid;
  const std::string& dir = daemon.dir;
  v1::Transcoder::Stub* stub = daemon.stub.get();
  const std::string worker = daemon.worker;

  int raw_w = 0, raw_h = 0;
  std::vector<uint8_t> input;
  if (!o.raw_size.empty() && !o.raw_file.empty()) {
    std::sscanf(o.raw_size.c_str(), "%dx%d", &raw_w, &raw_h);
    input = ReadAll(o.raw_file);
  } else if (!o.raw_size.empty()) {
    std::sscanf(o.raw_size.c_str(), "%dx%d", &raw_w, &raw_h);
    const std::string raw = dir + "/input.yuv";
    const std::string cmd = "ffmpeg -loglevel error -nostdin -y -i '" + o.input + "' -vf scale=" + std::to_string(raw_w) +
                            ":" + std::to_string(raw_h) + " -pix_fmt yuv420p -f rawvideo " + raw;
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "conveyor-bench-daemon: ffmpeg could not decode %s\n", o.input.c_str());
      return 1;
    }
    input = ReadAll(raw);
  } else {
    input = ReadAll(o.input);
  }
  const uint64_t rss_idle = RssBytes(pid);
  // A warm-up at the timed concurrency: what is timed is a daemon that has served such
  // sessions before (its heap grown, and its frame-assembly rings kept for the next
  // sessions, assembly_ring_pool.h), as a long-running one has.
  auto run_sessions = [&](std::vector<SessionResult>& out) {
    std::vector<std::thread> threads;
    for (int i = 0; i < o.sessions; ++i) {
      threads.emplace_back([&, i] { out[i] = RunSession(stub, o, input, raw_w, raw_h); });
    }
    for (auto& t : threads) t.join();
  };
  std::vector<SessionResult> results(o.sessions);
  run_sessions(results);
  std::atomic<uint64_t> rss_peak{0};
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) {
      rss_peak = std::max<uint64_t>(rss_peak, RssBytes(pid));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const double cpu_before = ProcessCpuSeconds(pid);
  const double client_cpu_before = RusageCpuSeconds(RUSAGE_SELF);
  const auto t0 = Clock::now();
  run_sessions(results);
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu_used = ProcessCpuSeconds(pid) - cpu_before;
  const double client_cpu_used = RusageCpuSeconds(RUSAGE_SELF) - client_cpu_before;
  done = true;
  sampler.join();
  // Lockstep: what one small request and its answer cost on this channel alone, the floor
  // under any per-frame exchange. GetServerStatus also gathers the workers' figures, so
  // this is the floor or a little above it.
  std::vector<double> rpc_round_trips;
  for (int i = 0; o.lockstep && i < 500; ++i) {
    grpc::ClientContext ctx;
    v1::ServerStatus st;
    const auto sent = Clock::now();
    if (!stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &st).ok()) break;
    rpc_round_trips.push_back(std::chrono::duration<double>(Clock::now() - sent).count());
  }
  StopBenchDaemon(&daemon);

  uint64_t frames = 0, bytes = 0, shared_jpegs = 0, bytes_sent = 0, read_requests = 0, spooled_bytes = 0;
  double encode_s = 0, queue_s = 0, handover_s = 0;
  std::vector<double> lat, first;
  std::vector<std::pair<std::string, double>> stages;  // summed over sessions, in the Summary's order
  std::map<std::string, int> decoders;  // Started.decoder -> sessions
  std::map<std::string, int> decoder_details;
  for (const SessionResult& r : results) {
    if (!r.status.ok()) {
      std::fprintf(stderr, "session failed: %s%s\n", r.status.error_message().c_str(),
                   r.failure.empty() ? "" : (" (" + r.failure + ")").c_str());
      return 1;
    }
    frames += r.frames;
    bytes += r.bytes;
    shared_jpegs += r.shared_jpegs;
    bytes_sent += r.bytes_sent;
    read_requests += r.read_requests;
    spooled_bytes += r.spooled_bytes;
    encode_s += r.encode_s;
    queue_s += r.queue_s;
    handover_s += r.handover_s;
    for (const auto& [name, seconds] : r.stages) {
      auto it = std::find_if(stages.begin(), stages.end(), [&](const auto& s) { return s.first == name; });
      if (it == stages.end()) {
        stages.emplace_back(name, seconds);
      } else {
        it->second += seconds;
      }
    }
    lat.insert(lat.end(), r.latencies.begin(), r.latencies.end());
    first.push_back(r.first_frame_s);
    decoders[r.decoder.empty() ? "none" : r.decoder]++;
    if (!r.decoder_detail.empty()) decoder_details[r.decoder_detail]++;
  }
  // "gpu x32" (and "h264 via cuda x32"): a run that fell back to the CPU shows here.
  auto tally = [](const std::map<std::string, int>& counts) {
    std::string out;
    for (const auto& [name, n] : counts) out += (out.empty() ? "" : ", ") + name + " x" + std::to_string(n);
    return out;
  };
  const std::string decoder_tally = tally(decoders);
  const int not_gpu = o.sessions - (decoders.count("gpu") ? decoders.at("gpu") : 0);
  const double fps = frames / wall;
  const double our_bpf = frames ? static_cast<double>(bytes) / frames : 0;

  // ffmpeg at the -q:v whose output size is nearest ours (container input only: ffmpeg
  // decodes the same file; in raw mode it decodes it too, so the comparison stays fair).
  FfmpegRun best;
  auto run_reference = [&](int q) {
    return reference == Reference::kLibav ? RunLibav(o.reference_bin, o.input, q, o.ffmpeg_threads)
                                          : RunFfmpegCli(o.input, q, o.ffmpeg_threads);
  };
  for (int q = 2; reference != Reference::kNone && q <= 12; ++q) {
    FfmpegRun f = run_reference(q);
    if (f.fps == 0) continue;
    if (best.fps == 0 || std::abs(f.bytes_per_frame - our_bpf) < std::abs(best.bytes_per_frame - our_bpf)) best = f;
    if (f.bytes_per_frame < our_bpf) break;  // sizes only fall from here
  }
  // Re-measure the matched q once more, now that the page cache is warm.
  if (best.q > 0) {
    FfmpegRun again = run_reference(best.q);
    if (again.fps > best.fps) best = again;
  }

  std::printf("conveyor-bench-daemon  %s, %d session(s), q%d, %s input, %s output, worker %s\n", o.input.c_str(),
              o.sessions, o.quality,
              raw_w ? ("raw " + o.raw_size + (o.lockstep ? " lockstep" : "") +
                       (o.shared_memory_slots > 0 ? " shared-memory" : "") +
                       (o.shared_output_slots > 0 ? ", JPEGs in shared memory" : "")).c_str()
                    : o.seekable ? "seekable container" : "container",
              o.container.empty() ? "JPEG frames" : o.container.c_str(), worker.c_str());
  std::printf("%-34s %10s %14s %12s %12s\n", "", "frames/s", "bytes/frame", "lat p50", "lat p99");
  std::printf("%-34s %10.1f %14.0f %10.2fms %10.2fms\n", "conveyord (gRPC, end to end)", fps, our_bpf,
              Percentile(lat, 0.5) * 1e3, Percentile(lat, 0.99) * 1e3);
  if (reference == Reference::kFfmpegCli) {
    std::printf("%-34s %10.1f %14.0f\n", ("ffmpeg -c:v mjpeg -q:v " + std::to_string(best.q)).c_str(), best.fps,
                best.bytes_per_frame);
    std::printf("reference: the ffmpeg CLI on this host\n");
  } else if (reference == Reference::kLibav) {
    std::printf("%-34s %10.1f %14.0f\n", ("libav mjpeg -q:v " + std::to_string(best.q)).c_str(), best.fps,
                best.bytes_per_frame);
    std::printf("reference: %s, the ffmpeg CLI's pipeline on the libav* it loads (no ffmpeg CLI used); "
                "%.1f frames/s over its own run, without its process start\n",
                o.reference_bin.c_str(), best.inner_fps);
  } else {
    std::printf("reference: none (no ffmpeg on this host and no --reference-bin), so the ratio prints as 0\n");
  }
  // A muxed stream has no frame boundaries, so no first frame to time.
  char first_frame[32] = "n/a";
  if (o.container.empty()) std::snprintf(first_frame, sizeof(first_frame), "%.1f ms", Percentile(first, 0.5) * 1e3);
  std::printf("ratio to ffmpeg: %.2fx; time to first frame p50 %s; daemon RSS idle %.1f MiB, peak %.1f MiB\n",
              best.fps > 0 ? fps / best.fps : 0, first_frame, rss_idle / 1048576.0, rss_peak / 1048576.0);
  const double cpu_ms_per_frame = frames > 0 ? 1e3 * cpu_used / frames : 0;
  const double client_cpu_ms_per_frame = frames > 0 ? 1e3 * client_cpu_used / frames : 0;
  std::printf("daemon CPU: %.2f ms a frame (user + system, all threads, over the timed sessions); this client %.2f ms\n",
              cpu_ms_per_frame, client_cpu_ms_per_frame);
  std::printf("decoder: %s (Started.decoder; %s); decode asked: %s\n", decoder_tally.c_str(),
              decoder_details.empty() ? "no decoder named" : tally(decoder_details).c_str(),
              o.decode.empty() ? "unspecified (the daemon's decode.mode)" : o.decode.c_str());
  const double decode_ref_ratio = decode_ref.fps > 0 ? fps / decode_ref.fps : 0;
  if (decode_ref.ok) {
    const char* ceiling = reference_decoder == "cuda" ? "NVDEC" : "CPU";
    std::printf("decode-only reference (%s --decoder %s, %d streams): %.1f frames/s over its own run (%.1f over its "
                "process), CPU %.2f ms a frame; conveyord %.2fx of %s decode-only\n",
                o.decode_reference.c_str(), reference_decoder.c_str(), o.sessions, decode_ref.fps,
                decode_ref.process_fps, decode_ref.cpu_ms_per_frame, decode_ref_ratio, ceiling);
  }
  if (frames > 0) {
    std::printf("worker stages a frame (the sessions' Summary): queue %.3f ms, encode %.3f ms, worker -> session "
                "hand-over %.3f ms\n",
                1e3 * queue_s / frames, 1e3 * encode_s / frames, 1e3 * handover_s / frames);
    // A session's time a frame, stage by stage: beside its wall time a frame (sessions x
    // seconds / frames), this says where a session waits.
    std::string line;
    for (const auto& [name, seconds] : stages) {
      char part[96];
      std::snprintf(part, sizeof part, "%s%s %.3f", line.empty() ? "" : ", ", name.c_str(), 1e3 * seconds / frames);
      line += part;
    }
    std::printf("session stages a frame (ms): %s; wall a frame per session %.3f ms\n", line.c_str(),
                1e3 * o.sessions * wall / frames);
  }
  // Frames/s moves with whatever else the host runs; the CPU a frame costs much less, as
  // time given to other processes is not counted. With the cores busy on both sides, the
  // CPU ratio is what the frames/s ratio would be on a quiet host (less the idle time).
  const double cpu_ratio = best.cpu_ms_per_frame > 0 && cpu_ms_per_frame + client_cpu_ms_per_frame > 0
                               ? best.cpu_ms_per_frame / (cpu_ms_per_frame + client_cpu_ms_per_frame)
                               : 0;
  if (best.cpu_ms_per_frame > 0) {
    std::printf("CPU a frame: daemon %.2f + this client %.2f ms, reference %.2f ms: ratio %.2fx by CPU\n",
                cpu_ms_per_frame, client_cpu_ms_per_frame, best.cpu_ms_per_frame, cpu_ratio);
  }
  if (raw_w == 0) {
    // What the input cost to move: a seekable input whose moov follows mdat is sent about
    // twice over; streamed, the daemon spools all of it to a file instead.
    const double mib = 1048576.0;
    std::printf("input: %.2f MiB file; this client sent %.2f MiB in all, %.2f MiB a session (%.2fx the file); "
                "read requests %.1f a session; spooled %.2f MiB a session; %.1f frames a session\n",
                input.size() / mib, bytes_sent / mib, bytes_sent / mib / o.sessions,
                input.empty() ? 0 : static_cast<double>(bytes_sent) / o.sessions / input.size(),
                static_cast<double>(read_requests) / o.sessions, spooled_bytes / mib / o.sessions,
                static_cast<double>(frames) / o.sessions);
  }
  if (o.shared_output_slots > 0) {
    std::printf("JPEGs through shared memory: %llu of %llu (the rest came in messages: no slot was free)\n",
                static_cast<unsigned long long>(shared_jpegs), static_cast<unsigned long long>(frames));
  }
  if (raw_w > 0 && o.lockstep && frames > 0) {
    // The Summary gives the encode's total, not each frame's, so the overhead is the mean
    // latency against the mean encode (the same frames on both sides); the p50 line, a
    // median against a mean, is kept for comparison with earlier records.
    const double per_frame_encode = encode_s / frames;
    const double mean_latency = lat.empty() ? 0 : std::accumulate(lat.begin(), lat.end(), 0.0) / lat.size();
    const double p50_latency = Percentile(lat, 0.5);
    std::printf("lockstep: latency mean %.3f ms against worker encode %.3f ms a frame: gRPC and session overhead "
                "%.1f%% (%.3f ms); by the p50 latency (%.3f ms): %.1f%%\n",
                mean_latency * 1e3, per_frame_encode * 1e3, 100.0 * (mean_latency - per_frame_encode) / per_frame_encode,
                (mean_latency - per_frame_encode) * 1e3, p50_latency * 1e3,
                100.0 * (p50_latency - per_frame_encode) / per_frame_encode);
    // Where the overhead goes, by the daemon's own clocks: the worker's queue, its hand-over
    // back to the session; the rest is the way in (message, session, lane, dispatcher) and
    // the JPEG's way out (messages, socket, this client).
    const double queue = queue_s / frames, handover = handover_s / frames;
    std::printf("lockstep: of the overhead, worker queue %.3f ms, worker -> session hand-over %.3f ms, the rest "
                "(client -> worker, session -> client) %.3f ms\n",
                queue * 1e3, handover * 1e3, (mean_latency - per_frame_encode - queue - handover) * 1e3);
    if (!rpc_round_trips.empty()) {
      const double mean_rtt =
          std::accumulate(rpc_round_trips.begin(), rpc_round_trips.end(), 0.0) / rpc_round_trips.size();
      std::printf("lockstep: a unary RPC alone (GetServerStatus, %zu calls) takes mean %.3f ms, p50 %.3f ms on this "
                  "channel: %.1f%% of the worker encode\n",
                  rpc_round_trips.size(), mean_rtt * 1e3, Percentile(rpc_round_trips, 0.5) * 1e3,
                  100.0 * mean_rtt / per_frame_encode);
    }
  }
  const char* reference_name = reference == Reference::kFfmpegCli ? "ffmpeg_cli"
                               : reference == Reference::kLibav   ? "libav"
                                                                  : "none";
  std::printf("{\"bench\":\"daemon\",\"reference\":\"%s\",\"sessions\":%d,\"fps\":%.2f,\"bytes_per_frame\":%.0f,\"ffmpeg_fps\":%.2f,"
              "\"ffmpeg_q\":%d,\"ffmpeg_bytes_per_frame\":%.0f,\"ratio\":%.3f,\"latency_p50_ms\":%.3f,"
              "\"latency_p99_ms\":%.3f,\"rss_idle_mib\":%.1f,\"rss_peak_mib\":%.1f,\"cpu_ms_per_frame\":%.3f,"
              "\"client_cpu_ms_per_frame\":%.3f,\"ffmpeg_cpu_ms_per_frame\":%.3f,\"cpu_ratio\":%.3f,\"seekable\":%s,"
              "\"input_bytes\":%zu,\"bytes_sent\":%llu,\"bytes_sent_per_session\":%.0f,\"read_requests\":%llu,"
              "\"spooled_bytes\":%llu,\"frames\":%llu,\"first_frame_p50_ms\":%.3f,\"decode\":\"%s\","
              "\"decoders\":\"%s\",\"decode_ref_fps\":%.2f,\"decode_ref_cpu_ms_per_frame\":%.3f,"
              "\"decode_ref_ratio\":%.3f}\n",
              reference_name, o.sessions, fps, our_bpf, best.fps, best.q, best.bytes_per_frame, best.fps > 0 ? fps / best.fps : 0,
              Percentile(lat, 0.5) * 1e3, Percentile(lat, 0.99) * 1e3, rss_idle / 1048576.0, rss_peak / 1048576.0,
              cpu_ms_per_frame, client_cpu_ms_per_frame, best.cpu_ms_per_frame, cpu_ratio,
              o.seekable && raw_w == 0 ? "true" : "false", raw_w == 0 ? input.size() : size_t{0},
              static_cast<unsigned long long>(bytes_sent), static_cast<double>(bytes_sent) / o.sessions,
              static_cast<unsigned long long>(read_requests), static_cast<unsigned long long>(spooled_bytes),
              static_cast<unsigned long long>(frames), o.container.empty() ? Percentile(first, 0.5) * 1e3 : 0,
              o.decode.empty() ? "unspecified" : o.decode.c_str(), decoder_tally.c_str(), decode_ref.fps,
              decode_ref.cpu_ms_per_frame, decode_ref_ratio);
  if (o.decode == "gpu" && not_gpu > 0) {
    std::fprintf(stderr, "conveyor-bench-daemon: --decode gpu, but %d of %d session(s) reported another decoder (%s)\n",
                 not_gpu, o.sessions, decoder_tally.c_str());
    return 3;
  }
  return 0;
}

}  // namespace
}  // namespace conveyor::bench

int main(int argc, char** argv) {
  conveyor::bench::DaemonBenchOptions o;
  CLI::App app{"conveyor-bench-daemon: concurrent Transcode streams against conveyord, against ffmpeg's mjpeg"};
  app.add_option("--conveyord", o.conveyord, "The conveyord binary to start")->required();
  app.add_option("--input", o.input, "Input video file (streamed as container bytes)")->required();
  app.add_option("--sessions", o.sessions, "Concurrent Transcode streams");
  app.add_option("--quality", o.quality, "JPEG quality");
  CLI::Option* raw =
      app.add_option("--raw", o.raw_size, "WxH: send raw yuv420p frames (ffmpeg decodes the input first)");
  app.add_flag("--lockstep", o.lockstep, "Raw: one frame in flight per session");
  app.add_option("--shared-memory", o.shared_memory_slots,
                 "Raw: send frames through this many shared-memory slots (RawInput.shared_memory_slots) "
                 "instead of in messages");
  app.add_option("--shared-output", o.shared_output_slots,
                 "JPEGs through this many of the daemon's shared-memory slots "
                 "(JpegFramesOutput.shared_memory_slots) instead of in messages");
  app.add_option("--container", o.container, "mkv, mov or avi: the frames come back muxed (one rendition), not as JPEGs")
      ->check(CLI::IsMember({"mkv", "mov", "avi"}));
  app.add_flag("--seekable", o.seekable,
               "Container input as ContainerRange messages (ContainerInput.seekable), answering the daemon's "
               "ReadRequests, instead of container_chunk")
      ->excludes(raw);
  app.add_option("--chunk-bytes", o.chunk_bytes, "Container input: bytes a container_chunk or ContainerRange message")
      ->check(CLI::Range(size_t{1}, size_t{4} << 20));  // gRPC refuses messages past 4 MiB by default
  app.add_option("--raw-file", o.raw_file, "Raw: yuv420p frames of --raw WxH already decoded (no ffmpeg needed)");
  app.add_option("--ffmpeg-threads", o.ffmpeg_threads, "ffmpeg -threads (0: its default)");
  app.add_option("--reference", o.reference,
                 "auto (the ffmpeg CLI if on PATH, else libav if --reference-bin is given), ffmpeg, libav or none")
      ->check(CLI::IsMember({"auto", "ffmpeg", "libav", "none"}));
  app.add_option("--reference-bin", o.reference_bin,
                 "conveyor-bench-libav-mjpeg, the reference for a host without the ffmpeg CLI");
  app.add_option("--decode", o.decode,
                 "JobSpec.decode for every session: cpu, gpu or auto (unset: unspecified, the daemon's decode.mode); "
                 "with gpu, a session that reports another decoder fails the run")
      ->check(CLI::IsMember({"cpu", "gpu", "auto"}));
  app.add_option("--decode-reference", o.decode_reference,
                 "conveyor-bench-libav-decode: run first with --streams SESSIONS --decoder cuda (cpu with --decode "
                 "cpu) on the same input, and print the daemon's frames/s against it")
      ->excludes(raw);
  app.add_option("--daemon-arg", o.daemon_args, "Extra conveyord flag (repeatable); --daemon-arg=--config --daemon-arg=FILE reads FILE");
  CLI11_PARSE(app, argc, argv);
  return conveyor::bench::Run(o);
}
