// Deterministic test frames made in-process, for binaries that must run where there is
// no FFmpeg (the GPU host). Content mixes smooth gradients, hard edges, flat areas and
// noise so every Huffman path (long zero runs, ZRL, large levels) is exercised.
#pragma once

#include <cstdint>
#include <vector>

#include "frame.h"

namespace conveyor::testing {

struct SyntheticFrame {
  std::vector<uint8_t> bytes;  // packed layout of `view`
  FrameView view;
};

// `seed` varies the noise and the position of the shapes.
SyntheticFrame MakeSyntheticFrame(int width, int height, PixelFormat format, uint32_t seed,
                                  ColorMatrix matrix = ColorMatrix::kBt709,
                                  ColorRange range = ColorRange::kLimited);

}  // namespace conveyor::testing
