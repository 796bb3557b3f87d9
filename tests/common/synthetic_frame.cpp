// Synthetic frame content.
#include "synthetic_frame.h"

namespace conveyor::testing {
namespace {

uint32_t Hash(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

// One channel's value at (x, y): gradient + a moving disc + checker + noise band.
uint8_t Sample(int x, int y, int w, int h, int channel, uint32_t seed) {
  int v = (x * 255 / (w > 1 ? w - 1 : 1) + y * 128 / (h > 1 ? h - 1 : 1) + channel * 60) & 0xFF;
  const int cx = static_cast<int>(Hash(seed) % static_cast<uint32_t>(w));
  const int cy = static_cast<int>(Hash(seed + 1) % static_cast<uint32_t>(h));
  const int r = (w < h ? w : h) / 4 + 1;
  if ((x - cx) * (x - cx) + (y - cy) * (y - cy) < r * r) v = 255 - v;
  if (((x / 13) + (y / 11)) % 7 == 0) v = channel == 1 ? 20 : 230;
  if ((y / 32) % 3 == 1) {
    const int noise = static_cast<int>(Hash(seed * 7919u + y * 65537u + x * 31u + channel) % 61) - 30;
    v = v + noise < 0 ? 0 : (v + noise > 255 ? 255 : v + noise);
  }
  return static_cast<uint8_t>(v);
}

}  // namespace

SyntheticFrame MakeSyntheticFrame(int width, int height, PixelFormat format, uint32_t seed,
                                  ColorMatrix matrix, ColorRange range) {
  SyntheticFrame f;
  f.bytes.resize(PackedFrameSize(format, width, height));
  const PlaneGeometry g = PackedPlaneGeometry(format, width, height);
  const FormatLayout l = LayoutOf(format);
  for (int p = 0; p < l.num_planes; ++p) {
    uint8_t* plane = f.bytes.data() + g.offset[p];
    for (int y = 0; y < g.rows[p]; ++y) {
      for (int i = 0; i < g.row_bytes[p]; ++i) {
        int x = i, channel = p;
        if (l.kind == LayoutKind::kPackedRgb) {
          x = i / l.bytes_per_pixel;
          channel = i % l.bytes_per_pixel;
        } else if (l.kind == LayoutKind::kSemiPlanarYuv && p == 1) {
          x = i / 2;
          channel = 1 + i % 2;
        }
        // Chroma planes are smaller: scale coordinates back to luma for the pattern.
        const int sx = (p > 0 && l.kind != LayoutKind::kPackedRgb) ? x << l.chroma_shift_x : x;
        const int sy = (p > 0 && l.kind != LayoutKind::kPackedRgb) ? y << l.chroma_shift_y : y;
        plane[static_cast<size_t>(y) * g.row_bytes[p] + i] = Sample(sx, sy, width, height, channel, seed);
      }
    }
  }
  f.view = MakePackedFrameView(f.bytes.data(), f.bytes.size(), width, height, format, matrix, range).value();
  return f;
}

}  // namespace conveyor::testing
