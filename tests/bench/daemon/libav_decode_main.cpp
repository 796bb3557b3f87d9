// conveyor-bench-libav-decode: N concurrent demux + decode streams over one file, on NVDEC
// (`cuda`, as conveyord decodes) or FFmpeg's software decoder (`cpu`), and nothing after
// the decoder. conveyor-bench-daemon runs it as the decode-only ceiling of its container
// runs. Prints a table and one JSON line; links libav* alone, so it runs from the bundle.
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
  std::printf("{\"bench\":\"libav_decode\",\"decoder\":\"%s\",\"streams\":%d,\"frames\":%llu,\"seconds\":%.4f,"
              "\"fps\":%.2f,\"cpu_seconds\":%.4f,\"cpu_ms_per_frame\":%.4f}\n",
              o.decoder.c_str(), o.streams, static_cast<unsigned long long>(r.frames), r.seconds, fps, r.cpu_seconds,
              cpu_ms);
  return 0;
}
