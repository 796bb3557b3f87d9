// conveyor-bench-convert: what converting a format the kernels do not take costs on the
// CPU (libswscale through the media layer's FrameConverter), against encoding the same
// frame, measured in the same run. It decides where 10-bit sources are narrowed.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cpu_encoder.h"
#include "ffmpeg_handles.h"
#include "frame_convert.h"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
}

int main(int argc, char** argv) {
  int width = 1920, height = 1080, frames = 60;
  std::string format = "yuv420p10le";
  CLI::App app{"conveyor-bench-convert: libswscale conversion against encoding, per frame"};
  app.add_option("--width", width);
  app.add_option("--height", height);
  app.add_option("--format", format, "An FFmpeg pixel format the encoder does not take");
  app.add_option("--frames", frames);
  CLI11_PARSE(app, argc, argv);

  const AVPixelFormat pix = av_get_pix_fmt(format.c_str());
  if (pix == AV_PIX_FMT_NONE) {
    std::fprintf(stderr, "unknown pixel format %s\n", format.c_str());
    return 2;
  }
  AVFrame* frame = av_frame_alloc();
  frame->format = pix;
  frame->width = width;
  frame->height = height;
  frame->colorspace = AVCOL_SPC_BT709;
  frame->color_range = AVCOL_RANGE_MPEG;
  if (av_frame_get_buffer(frame, 0) < 0) return 1;
  // A gradient with noise in every plane (10-bit values for 16-bit samples).
  uint32_t seed = 1;
  const AVPixFmtDescriptor* desc = av_pix_fmt_desc_get(pix);
  for (int p = 0; p < 4 && frame->data[p]; ++p) {
    const int rows = (p == 1 || p == 2) ? AV_CEIL_RSHIFT(frame->height, desc->log2_chroma_h) : frame->height;
    for (int y = 0; y < rows; ++y) {
      uint8_t* row = frame->data[p] + static_cast<size_t>(y) * frame->linesize[p];
      for (int x = 0; x < frame->linesize[p]; ++x) {
        seed = seed * 1664525u + 1013904223u;
        row[x] = static_cast<uint8_t>((x + y + (seed >> 28)) & ((x & 1) ? 0x03 : 0xff));
      }
    }
  }
  conveyor::media::FrameConverter converter;
  auto target = conveyor::media::EncoderFormatFor(pix);
  if (!target.ok()) {
    std::fprintf(stderr, "%s\n", target.status().ToString().c_str());
    return 1;
  }
  std::vector<uint8_t> dst(conveyor::PackedFrameSize(*target, width, height));
  using Clock = std::chrono::steady_clock;
  conveyor::FrameView view;
  auto t0 = Clock::now();
  for (int i = 0; i < frames; ++i) {
    auto c = converter.Convert(*frame, dst.data(), dst.size());
    if (!c.ok()) {
      std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
      return 1;
    }
    view = c->view;
  }
  const double convert_s = std::chrono::duration<double>(Clock::now() - t0).count() / frames;
  conveyor::CpuJpegEncoder encoder(1);
  conveyor::EncodeParams params;
  t0 = Clock::now();
  for (int i = 0; i < frames; ++i) {
    if (!encoder.Encode(view, params).ok()) return 1;
  }
  const double encode_s = std::chrono::duration<double>(Clock::now() - t0).count() / frames;
  std::printf("conveyor-bench-convert  %dx%d %s -> %s, %d frames, one thread\n", width, height, format.c_str(),
              conveyor::PixelFormatName(*target), frames);
  std::printf("libswscale conversion  %8.2f ms/frame (%7.1f frames/s)\n", convert_s * 1e3, 1 / convert_s);
  std::printf("CPU encode, q85 4:2:0  %8.2f ms/frame (%7.1f frames/s)\n", encode_s * 1e3, 1 / encode_s);
  std::printf("conversion / encode: %.2f\n", convert_s / encode_s);
  std::printf("{\"bench\":\"convert\",\"format\":\"%s\",\"convert_ms\":%.3f,\"encode_ms\":%.3f}\n", format.c_str(),
              convert_s * 1e3, encode_s * 1e3);
  av_frame_free(&frame);
  return 0;
}
