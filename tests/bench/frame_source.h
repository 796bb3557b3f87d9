// Frames for the benchmark: read from .ppm (P6), .y4m or raw .yuv/.rgb files, or made
// in-process when no input is given (so the benchmark runs on hosts without FFmpeg).
#pragma once

#include <string>
#include <vector>

#include "frame.h"
#include "status.h"

namespace conveyor::bench {

struct OwnedFrame {
  std::vector<uint8_t> bytes;
  FrameView view;
};

struct SourceOptions {
  std::string input;            // empty: synthetic
  int width = 1920, height = 1080;  // raw input and synthetic frames
  PixelFormat format = PixelFormat::kYuv420p;  // raw input and synthetic frames
  ColorMatrix matrix = ColorMatrix::kBt709;    // .y4m and raw carry no matrix
  int max_frames = 8;           // distinct frames kept in memory
};

// Loads up to max_frames frames. Y4M's C tag picks the pixel format and XCOLORRANGE the
// range; the matrix comes from options.
StatusOr<std::vector<OwnedFrame>> LoadFrames(const SourceOptions& options);

}  // namespace conveyor::bench
