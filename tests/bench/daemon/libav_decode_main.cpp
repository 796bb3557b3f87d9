// conveyor-bench-libav-decode: N concurrent demux + decode streams over one file, on NVDEC
// (`cuda`, as conveyord decodes) or FFmpeg's software decoder (`cpu`), and nothing after
// the decoder. conveyor-bench-daemon runs it as the decode-only ceiling of its container
// runs. With --churn-seconds it opens and closes decoders for that long instead (a stress
// of the hardware decoders' lifecycle, libav_decode.h). Prints a table and one JSON line;
// links libav* alone, so it runs from the bundle.
#include <cstdio>
#include <string>

#include <CLI/CLI.hpp>

extern "C" {
#include <libavutil/avutil.h>
#include <libavutil/log.h>
}

#include "libav_decode.h"

int main(int argc, char** argv) {
  conveyor::bench::LibavDecodeOptions o;
  CLI::App app{"conveyor-bench-libav-decode: N concurrent decodes of one file, on NVDEC (cuda) or the CPU"};
  app.add_option("--input", o.input, "Input video file (read once, each stream demuxes it from memory)")->required();
  app.add_option("--streams", o.streams, "Concurrent streams, each a thread with its own demuxer and decoder")
      ->check(CLI::Range(1, 1024));
  app.add_option("--decoder", o.decoder, "cuda: FFmpeg's cuda hwaccel, frames left on the GPU; cpu: software")
      ->required()
      ->check(CLI::IsMember({"cuda", "cpu"}));
  app.add_option("--threads", o.threads, "cpu: the decoder's thread count (0: FFmpeg's choice)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--device", o.device, "cuda: the CUDA device")->check(CLI::NonNegativeNumber);
  app.add_flag("--context-per-stream", o.context_per_stream,
               "cuda: each stream opens its own CUDA context instead of sharing the primary one");
  app.add_option("--churn-seconds", o.churn_seconds,
                 "Churn for this long: each stream closes its decoder every --frames-per-open frames and opens "
                 "the next, and a releaser thread frees each frame --hold-ms after it came")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--frames-per-open", o.frames_per_open, "Churn: frames a decoder gives before it is closed")
      ->check(CLI::PositiveNumber);
  app.add_option("--hold-ms", o.hold_ms, "Churn: how long the releaser keeps a frame")->check(CLI::NonNegativeNumber);
  app.add_option("--discipline", o.discipline,
                 "Churn, cuda: daemon (conveyord's: the device's lifecycle thread and lock) or plain "
                 "(FFmpeg's usual use)")
      ->check(CLI::IsMember({"daemon", "plain"}));
  CLI11_PARSE(app, argc, argv);
  av_log_set_level(AV_LOG_ERROR);

  auto result = conveyor::bench::DecodeStreams(o);
  if (!result.ok()) {
    std::fprintf(stderr, "conveyor-bench-libav-decode: %s\n", result.status().ToString().c_str());
    return 1;
  }
  const auto& r = *result;
  const double fps = r.seconds > 0 ? r.frames / r.seconds : 0;
  const double cpu_ms = r.frames > 0 ? 1e3 * r.cpu_seconds / r.frames : 0;
  // The libraries actually loaded (the bundle's, under its LD_LIBRARY_PATH), not the headers.
  std::printf("conveyor-bench-libav-decode  %s, %dx%d, %d stream(s), decoder %s; FFmpeg %s\n", o.input.c_str(),
              r.width, r.height, o.streams, r.decoder.c_str(), av_version_info());
  std::printf("%8s %10s %10s %10s %16s\n", "streams", "frames", "seconds", "frames/s", "CPU ms/frame");
  std::printf("%8d %10llu %10.3f %10.1f %16.3f\n", o.streams, static_cast<unsigned long long>(r.frames), r.seconds,
              fps, cpu_ms);
  if (o.churn_seconds > 0) {
    std::printf("churn (%s): %llu decoders opened and closed, %.1f a second; %llu frames freed after their decoder "
                "had closed\n",
                o.decoder == "cuda" ? o.discipline.c_str() : "cpu", static_cast<unsigned long long>(r.opens),
                r.seconds > 0 ? r.opens / r.seconds : 0, static_cast<unsigned long long>(r.outlived_decoder));
  }
  std::printf("{\"bench\":\"libav_decode\",\"decoder\":\"%s\",\"streams\":%d,\"frames\":%llu,\"seconds\":%.4f,"
              "\"fps\":%.2f,\"cpu_seconds\":%.4f,\"cpu_ms_per_frame\":%.4f,\"opens\":%llu,\"outlived_decoder\":%llu}\n",
              o.decoder.c_str(), o.streams, static_cast<unsigned long long>(r.frames), r.seconds, fps, r.cpu_seconds,
              cpu_ms, static_cast<unsigned long long>(r.opens), static_cast<unsigned long long>(r.outlived_decoder));
  return 0;
}
