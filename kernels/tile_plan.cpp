// Builds tile plans: a scale plan whose destination planes start at the cell's corner
// in the sprite and step by the sprite's rows.
#include "tile_plan.h"

#include <cstring>
#include <string>

namespace conveyor {

StatusOr<ScalePlan> MakeTilePlan(PixelFormat format, int src_width, int src_height, int cell_width,
                                 int cell_height, int sprite_width, int sprite_height, int x, int y) {
  ASSIGN_OR_RETURN(ScalePlan plan, MakeScalePlan(format, src_width, src_height, cell_width, cell_height));
  if (sprite_width < 1 || sprite_height < 1 || sprite_width > kMaxDimension || sprite_height > kMaxDimension) {
    return InvalidArgument("sprite " + std::to_string(sprite_width) + "x" + std::to_string(sprite_height) +
                           " is out of range 1.." + std::to_string(kMaxDimension));
  }
  if (x < 0 || y < 0 || x + cell_width > sprite_width || y + cell_height > sprite_height) {
    return InvalidArgument("cell " + std::to_string(cell_width) + "x" + std::to_string(cell_height) + " at " +
                           std::to_string(x) + "," + std::to_string(y) + " is not inside the sprite " +
                           std::to_string(sprite_width) + "x" + std::to_string(sprite_height));
  }
  const FormatLayout l = LayoutOf(format);
  if (l.kind != LayoutKind::kPackedRgb) {
    const int mx = 1 << l.chroma_shift_x, my = 1 << l.chroma_shift_y;
    if (x % mx != 0 || cell_width % mx != 0 || y % my != 0 || cell_height % my != 0) {
      return InvalidArgument(std::string("cell ") + std::to_string(cell_width) + "x" + std::to_string(cell_height) +
                             " at " + std::to_string(x) + "," + std::to_string(y) + " splits chroma samples of " +
                             PixelFormatName(format) + " (corner and size must be multiples of " +
                             std::to_string(mx) + "x" + std::to_string(my) + ")");
    }
  }
  const PlaneGeometry sprite = PackedPlaneGeometry(format, sprite_width, sprite_height);
  for (int i = 0; i < plan.num_planes; ++i) {
    const bool chroma = l.kind != LayoutKind::kPackedRgb && i > 0;
    const int px = chroma ? x >> l.chroma_shift_x : x;
    const int py = chroma ? y >> l.chroma_shift_y : y;
    const size_t bytes_per_sample = static_cast<size_t>(plan.dst_row_bytes[i] / plan.plane[i].dst_w);
    plan.dst_offset[i] = sprite.offset[i] + static_cast<size_t>(py) * sprite.row_bytes[i] + px * bytes_per_sample;
    plan.dst_row_bytes[i] = sprite.row_bytes[i];
  }
  plan.dst_size = PackedFrameSize(format, sprite_width, sprite_height);
  return plan;
}

PlaneFill BlackFill(PixelFormat format, ColorRange range, int width, int height) {
  const FormatLayout l = LayoutOf(format);
  const PlaneGeometry g = PackedPlaneGeometry(format, width, height);
  const bool full = format == PixelFormat::kYuvj420p || range == ColorRange::kFull;
  PlaneFill fill;
  fill.num_planes = l.num_planes;
  for (int i = 0; i < l.num_planes; ++i) {
    fill.offset[i] = g.offset[i];
    fill.bytes[i] = static_cast<size_t>(g.row_bytes[i]) * g.rows[i];
    if (l.kind == LayoutKind::kPackedRgb) {
      fill.value[i] = 0;
    } else {
      fill.value[i] = i > 0 ? 128 : (full ? 0 : 16);
    }
  }
  return fill;
}

void FillBlack(const PlaneFill& fill, uint8_t* packed) {
  for (int i = 0; i < fill.num_planes; ++i) std::memset(packed + fill.offset[i], fill.value[i], fill.bytes[i]);
}

}  // namespace conveyor
