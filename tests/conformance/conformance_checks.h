// GoogleTest-level checks shared by the conformance tests: encode a buffer with
// CpuJpegEncoder and decode the result with both decoders, checking everything a
// conformant baseline JFIF stream of that geometry must satisfy.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "conformance_util.h"
#include "cpu_encoder.h"

namespace conformance {

// Encodes a tightly packed frame (MakePackedFrameView + Encode).
conveyor::StatusOr<std::vector<uint8_t>> EncodePacked(
    conveyor::CpuJpegEncoder& enc, const std::vector<uint8_t>& data, int width, int height,
    conveyor::PixelFormat format, const conveyor::EncodeParams& params,
    conveyor::ColorMatrix matrix = conveyor::ColorMatrix::kBt601,
    conveyor::ColorRange range = conveyor::ColorRange::kLimited);

struct BothDecodes {
  Planes turbo_rgb;     // libjpeg-turbo, RGB
  FfmpegDecoded ffmpeg; // libavcodec's YCbCr planes
  Planes turbo_yuv;     // libjpeg-turbo's YCbCr planes cropped to the picture (compare_planes)
  StreamLayout layout;
  // Largest per-sample difference between the two decoders' YCbCr planes (same
  // coefficients, different IDCTs), or -1 when not compared.
  int plane_max_diff = -1;
  double plane_psnr = 0;  // PSNR between the two decoders' YCbCr planes (all planes)
};

// Decodes `jpeg` with libjpeg-turbo and FFmpeg and checks: marker structure (SOI..EOI,
// SOF0 size and sampling factors), both decoders succeed without warnings, both report
// width x height and the subsampling `s`. With `compare_planes` also decodes to raw
// planes with libjpeg-turbo and measures agreement with FFmpeg's planes.
::testing::AssertionResult DecodeWithBoth(const std::vector<uint8_t>& jpeg, int width,
                                          int height, conveyor::Subsampling s,
                                          BothDecodes* out, bool compare_planes = false);

}  // namespace conformance
