// The encode benchmark: loads frames, encodes them repeatedly on the chosen worker,
// prints a table and ends with one JSON line.
#include "bench_encode.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "cpu_encoder.h"
#include "encode_plan.h"
#include "frame_source.h"
#include "gpu_encoder.h"
#include "libjpeg_reference.h"

namespace conveyor::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct RunResult {
  double seconds = 0;
  int frames = 0;
  size_t bytes = 0;
  double fps() const { return seconds > 0 ? frames / seconds : 0; }
};

// Encodes `count` frames round-robin over `frames` after one warm-up pass.
StatusOr<RunResult> Time(const std::vector<OwnedFrame>& frames, int count,
                         const std::function<StatusOr<std::vector<uint8_t>>(const FrameView&)>& encode) {
  for (const auto& f : frames) RETURN_IF_ERROR(encode(f.view).status());
  RunResult r;
  const auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    auto out = encode(frames[i % frames.size()].view);
    if (!out.ok()) return out.status();
    r.bytes += out->size();
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.frames = count;
  return r;
}

Status WriteFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (!out) return Internal("cannot write " + path);
  return OkStatus();
}

Status Run(const EncodeBenchOptions& o) {
  SourceOptions so;
  so.input = o.input;
  if (std::sscanf(o.size.c_str(), "%dx%d", &so.width, &so.height) != 2)
    return InvalidArgument("--size must be WxH, got " + o.size);
  ASSIGN_OR_RETURN(so.format, ParsePixelFormat(o.format));
  ASSIGN_OR_RETURN(so.matrix, ParseColorMatrix(o.matrix));
  so.max_frames = o.output_dir.empty() ? 8 : o.frames;
  ASSIGN_OR_RETURN(std::vector<OwnedFrame> frames, LoadFrames(so));
  const FrameView& first = frames[0].view;

  EncodeParams params;
  params.quality = o.quality;
  params.restart_interval = o.restart;
  ASSIGN_OR_RETURN(params.subsampling, ParseSubsampling(o.subsampling));
  ASSIGN_OR_RETURN(EncodePlan plan, MakeEncodePlan(first, params));

  std::string worker = o.worker;
  const GpuProbe probe = ProbeGpus();
  if (worker == "auto") worker = probe.devices.empty() ? "cpu" : "gpu";
  if (worker != "cpu" && worker != "gpu") return InvalidArgument("--worker must be cpu, gpu or auto");
  std::string device = "cpu";
  if (worker == "gpu") {
    if (probe.devices.empty()) return Unavailable("--worker gpu: " + probe.unavailable_reason);
    device = probe.devices[0].name;
  }

  CpuJpegEncoder cpu(o.threads);
  std::unique_ptr<GpuJpegEncoder> gpu;
  if (worker == "gpu") {
    ASSIGN_OR_RETURN(gpu, GpuJpegEncoder::Create(0));
  }
  auto encode = [&](const FrameView& f) { return gpu ? gpu->Encode(f, params) : cpu.Encode(f, params); };

  if (!o.output_dir.empty()) {
    std::filesystem::create_directories(o.output_dir);
  }
  ASSIGN_OR_RETURN(RunResult main_run, Time(frames, o.frames, encode));
  if (!o.output.empty()) {
    ASSIGN_OR_RETURN(auto jpeg, encode(first));
    RETURN_IF_ERROR(WriteFile(o.output, jpeg));
  }
  if (!o.output_dir.empty()) {
    for (size_t i = 0; i < frames.size(); ++i) {
      ASSIGN_OR_RETURN(auto jpeg, encode(frames[i].view));
      char name[32];
      std::snprintf(name, sizeof(name), "/frame_%05zu.jpg", i);
      RETURN_IF_ERROR(WriteFile(o.output_dir + name, jpeg));
    }
  }

  // On the CPU worker: ours on one thread, and libjpeg-turbo on one thread, same frames.
  RunResult one_thread, reference;
  std::string reference_note = ReferenceUnsupportedReason(first, params);
  if (worker == "cpu") {
    CpuJpegEncoder single(1);
    ASSIGN_OR_RETURN(one_thread, Time(frames, o.frames, [&](const FrameView& f) { return single.Encode(f, params); }));
    if (reference_note.empty()) {
      ASSIGN_OR_RETURN(reference, Time(frames, o.frames, [&](const FrameView& f) {
                         return EncodeWithLibjpegTurbo(f, params, plan.restart_interval);
                       }));
    }
  }

  const double mpix = static_cast<double>(first.width) * first.height / 1e6;
  std::printf("\nconveyor-bench encode  %dx%d %s -> q%d %s, restart %d MCUs, %d frames\n", first.width,
              first.height, PixelFormatName(first.format), params.quality, SubsamplingName(params.subsampling),
              plan.restart_interval, o.frames);
  std::printf("%-34s %10s %12s %12s %10s\n", "run", "frames/s", "Mpixel/s", "bytes/frame", "bits/px");
  auto row = [&](const char* name, const RunResult& r) {
    if (r.frames == 0) return;
    std::printf("%-34s %10.1f %12.1f %12zu %10.3f\n", name, r.fps(), r.fps() * mpix, r.bytes / r.frames,
                8.0 * r.bytes / r.frames / (mpix * 1e6));
  };
  const std::string main_name = worker == "gpu" ? "conveyor gpu (" + device + ")"
                                                : "conveyor cpu (" + std::to_string(cpu.threads()) + " threads)";
  row(main_name.c_str(), main_run);
  row("conveyor cpu (1 thread)", one_thread);
  const bool from_planes = LayoutOf(first.format).kind != LayoutKind::kPackedRgb;
  // From YUV planes libjpeg-turbo skips colour conversion and range expansion and writes
  // no restart markers: a slightly easier job than ours.
  row(from_planes ? "libjpeg-turbo (1 thread, YUV planes)" : "libjpeg-turbo (1 thread)", reference);
  double ratio = 0;
  if (reference.frames > 0 && one_thread.frames > 0) {
    ratio = one_thread.fps() / reference.fps();
    std::printf("per-core ratio conveyor/libjpeg-turbo: %.2fx (goal >= 1.00x)\n", ratio);
  } else if (worker == "cpu") {
    std::printf("libjpeg-turbo reference skipped: %s\n", reference_note.c_str());
  }
  if (!o.output_dir.empty()) std::printf("wrote %zu JPEG frames to %s\n", frames.size(), o.output_dir.c_str());
  if (!o.output.empty()) std::printf("wrote %s\n", o.output.c_str());

  std::printf(
      "{\"bench\":\"encode\",\"worker\":\"%s\",\"device\":\"%s\",\"width\":%d,\"height\":%d,\"format\":\"%s\","
      "\"quality\":%d,\"subsampling\":\"%s\",\"restart_interval\":%d,\"frames\":%d,\"threads\":%d,"
      "\"fps\":%.2f,\"bytes_per_frame\":%zu,\"fps_1thread\":%.2f,\"libjpeg_turbo_fps\":%.2f,"
      "\"ratio_per_core\":%.3f}\n",
      worker.c_str(), device.c_str(), first.width, first.height, PixelFormatName(first.format), params.quality,
      SubsamplingName(params.subsampling), plan.restart_interval, o.frames, worker == "cpu" ? cpu.threads() : 0,
      main_run.fps(), main_run.bytes / main_run.frames, one_thread.fps(), reference.fps(), ratio);
  return OkStatus();
}

}  // namespace

void AddEncodeCommand(CLI::App& app, EncodeBenchOptions* o, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("encode", "Encode frames to JPEG and report frames/s");
  cmd->add_option("--input", o->input, "Input .ppm, .y4m or raw frames; synthetic frames when omitted");
  cmd->add_option("--size", o->size, "WxH of raw input or synthetic frames")->capture_default_str();
  cmd->add_option("--format", o->format, "Pixel format of raw input or synthetic frames")->capture_default_str();
  cmd->add_option("--matrix", o->matrix, "Colour matrix of YUV input (y4m and raw carry none)")->capture_default_str();
  cmd->add_option("--quality", o->quality, "JPEG quality 1..100")->capture_default_str();
  cmd->add_option("--subsampling", o->subsampling, "420, 422 or 444")->capture_default_str();
  cmd->add_option("--restart", o->restart, "Restart interval in MCUs; -1 auto, 0 none")->capture_default_str();
  cmd->add_option("--output", o->output, "Write the first frame's JPEG here");
  cmd->add_option("--output-dir", o->output_dir, "Write every input frame's JPEG into this directory");
  cmd->add_option("--worker", o->worker, "cpu, gpu or auto")->capture_default_str();
  cmd->add_option("--frames", o->frames, "Frames to encode in the timed run")->capture_default_str();
  cmd->add_option("--threads", o->threads, "CPU worker threads; 0 = all cores")->capture_default_str();
  cmd->callback([o, exit_code] {
    const Status s = Run(*o);
    if (!s.ok()) {
      std::fprintf(stderr, "conveyor-bench encode: %s\n", s.ToString().c_str());
      *exit_code = 1;
    }
  });
}

}  // namespace conveyor::bench
