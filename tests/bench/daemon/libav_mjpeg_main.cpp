// conveyor-bench-libav-mjpeg: `ffmpeg -i IN -c:v mjpeg -q:v Q -f null -` on libav* alone,
// the reference conveyor-bench-daemon runs on a host without the ffmpeg CLI. Prints a
// table and one JSON line; --output writes the packets for a byte comparison with
// `ffmpeg ... -f mjpeg FILE`.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

extern "C" {
#include <libavutil/avutil.h>
#include <libavutil/log.h>
}

#include "libav_mjpeg.h"

int main(int argc, char** argv) {
  conveyor::bench::LibavMjpegOptions o;
  CLI::App app{"conveyor-bench-libav-mjpeg: ffmpeg -i IN -c:v mjpeg -q:v Q -f null -, on libav* alone"};
  app.add_option("--input", o.input, "Input video file")->required();
  app.add_option("--q", o.q, "ffmpeg's -q:v (mjpeg qscale, 2..31)");
  app.add_option("--decoder-threads", o.decoder_threads, "As `ffmpeg -threads N -i IN` (0: auto, the CLI's default)");
  app.add_option("--output", o.output, "Also write the packets here (what `-f mjpeg FILE` writes)");
  CLI11_PARSE(app, argc, argv);
  // swscale warns once per slice context that yuvj420p is deprecated; it is still what
  // the CLI negotiates, so the warning says nothing here.
  av_log_set_level(AV_LOG_ERROR);

  auto result = conveyor::bench::TranscodeToMjpeg(o);
  if (!result.ok()) {
    std::fprintf(stderr, "conveyor-bench-libav-mjpeg: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const auto& r = *result;
  const double fps = r.seconds > 0 ? r.frames / r.seconds : 0;
  const double bpf = r.frames ? static_cast<double>(r.bytes) / r.frames : 0;
  // The libraries actually loaded (the bundle's, under its LD_LIBRARY_PATH), not the headers.
  std::printf("conveyor-bench-libav-mjpeg  %s, %dx%d, q:v %d; FFmpeg %s; decoder %s; swscale %d thread(s); "
              "mjpeg %d thread(s)\n",
              o.input.c_str(), r.width, r.height, o.q, av_version_info(), r.decoder.c_str(), r.scaler_threads,
              r.encoder_threads);
  std::printf("%10s %10s %10s %14s %14s\n", "frames", "seconds", "frames/s", "bytes/frame", "bytes");
  std::printf("%10llu %10.3f %10.1f %14.1f %14llu\n", static_cast<unsigned long long>(r.frames), r.seconds, fps, bpf,
              static_cast<unsigned long long>(r.bytes));
  std::printf("{\"bench\":\"libav_mjpeg\",\"q\":%d,\"frames\":%llu,\"seconds\":%.4f,\"fps\":%.2f,"
              "\"bytes_per_frame\":%.1f,\"bytes\":%llu}\n",
              o.q, static_cast<unsigned long long>(r.frames), r.seconds, fps, bpf,
              static_cast<unsigned long long>(r.bytes));
  return 0;
}
