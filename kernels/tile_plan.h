// The tiling stage of storyboards: a frame scaled into one cell of a sprite, a larger
// frame in the packed layout that holds a grid of cells. It is the scaling stage with the
// sprite's rows as its destination (ScalePlan's offsets and row bytes), so the GPU kernel
// and the CPU path place the same bytes as they scale them.
#pragma once

#include <cstdint>

#include "frame.h"
#include "scale_plan.h"
#include "status.h"

namespace conveyor {

// A plan that scales a `src_width` x `src_height` frame to `cell_width` x `cell_height`
// and writes it at (x, y) of a packed `sprite_width` x `sprite_height` frame of the same
// format. Checks that the cell lies inside the sprite and, for subsampled chroma, that
// its corner and size are even, so that its chroma samples are whole ones of the sprite.
// dst_size is the sprite's size: the destination buffer is the whole sprite.
StatusOr<ScalePlan> MakeTilePlan(PixelFormat format, int src_width, int src_height, int cell_width,
                                 int cell_height, int sprite_width, int sprite_height, int x, int y);

// The byte each plane of a packed frame of `format` is filled with to be black, as the
// ffmpeg CLI's tile filter pads unused cells: Y 16 (0 at full range), Cb and Cr 128, and
// RGB 0.
struct PlaneFill {
  int num_planes = 0;
  uint8_t value[3] = {0, 0, 0};
  size_t offset[3] = {0, 0, 0};  // each plane's bytes in the packed layout
  size_t bytes[3] = {0, 0, 0};
};
PlaneFill BlackFill(PixelFormat format, ColorRange range, int width, int height);

// Fills a packed frame with BlackFill's bytes (the CPU path; the GPU worker sets the same
// bytes with one memset a plane).
void FillBlack(const PlaneFill& fill, uint8_t* packed);

}  // namespace conveyor
