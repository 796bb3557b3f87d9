// Derives MCU, segment and band geometry for an encode.
#include "encode_plan.h"

#include <algorithm>
#include <numeric>

namespace conveyor {
namespace {

constexpr int kDefaultBandPixelRows = 128;

// A frame's MCU rows in a subsampling: how many, their height in pixels and the blocks
// in each.
struct McuRows {
  int64_t rows, blocks_per_row;
  int mcu_h;
};

McuRows McuRowsOf(const FrameView& frame, Subsampling sub) {
  const int mcu_w = sub == Subsampling::k444 ? 8 : 16;
  const int mcu_h = sub == Subsampling::k420 ? 16 : 8;
  const int blocks_per_mcu = sub == Subsampling::k420 ? 6 : sub == Subsampling::k422 ? 4 : 3;
  return {(frame.height + mcu_h - 1) / mcu_h,
          static_cast<int64_t>((frame.width + mcu_w - 1) / mcu_w) * blocks_per_mcu, mcu_h};
}

}  // namespace

int AutoRestartInterval(int mcus_x, int mcus_y) {
  // 16 MCUs keeps segments long enough that the RST markers and byte padding cost well
  // under 1 % at usual qualities, and short enough that a 1080p frame has ~500 segments
  // for the GPU's Huffman stage to code in parallel.
  return std::min(16, mcus_x * mcus_y);
}

int EvenBandRows(const FrameView& frame, Subsampling sub, int64_t most_blocks) {
  const McuRows m = McuRowsOf(frame, sub);
  const int64_t blocks = m.blocks_per_row * m.rows;
  const int64_t bands = std::max<int64_t>(1, (blocks + most_blocks - 1) / most_blocks);
  return static_cast<int>((m.rows + bands - 1) / bands * m.mcu_h);
}

int SmallFirstBandRows(const FrameView& frame, Subsampling sub, int band_rows, int first_band_blocks) {
  if ((frame.height + band_rows - 1) / band_rows < 3) return 0;
  const McuRows m = McuRowsOf(frame, sub);
  return static_cast<int>(std::max<int64_t>(1, first_band_blocks / m.blocks_per_row) * m.mcu_h);
}

StatusOr<EncodePlan> MakeEncodePlan(const FrameView& frame, const EncodeParams& params,
                                    int band_rows_hint, int first_band_rows_hint) {
  RETURN_IF_ERROR(ValidateFrame(frame));
  RETURN_IF_ERROR(ValidateParams(params));

  EncodePlan p{};
  p.width = frame.width;
  p.height = frame.height;
  p.format = frame.format;
  p.layout = LayoutOf(frame.format);
  p.subsampling = params.subsampling;
  p.quality = params.quality;
  p.exif_orientation = params.exif_orientation;

  const int hs = params.subsampling == Subsampling::k444 ? 1 : 2;
  const int vs = params.subsampling == Subsampling::k420 ? 2 : 1;
  p.mcu_w = 8 * hs;
  p.mcu_h = 8 * vs;
  p.mcus_x = (frame.width + p.mcu_w - 1) / p.mcu_w;
  p.mcus_y = (frame.height + p.mcu_h - 1) / p.mcu_h;

  p.comp[0] = {hs, vs, p.mcus_x * p.mcu_w, 8 * vs, 0};
  p.comp[1] = {1, 1, p.mcus_x * 8, 8, 1};
  p.comp[2] = p.comp[1];

  int b = 0;
  for (int c = 0; c < 3; ++c) {
    for (int dy = 0; dy < p.comp[c].v; ++dy) {
      for (int dx = 0; dx < p.comp[c].h; ++dx, ++b) {
        p.block_comp[b] = static_cast<int8_t>(c);
        p.block_dx[b] = static_cast<int8_t>(dx);
        p.block_dy[b] = static_cast<int8_t>(dy);
      }
    }
  }
  p.blocks_per_mcu = b;

  const int total_mcus = p.mcus_x * p.mcus_y;
  p.restart_interval = params.restart_interval == kRestartAuto
                           ? AutoRestartInterval(p.mcus_x, p.mcus_y)
                           : params.restart_interval;
  p.segment_mcus = p.restart_interval == 0 ? total_mcus : std::min(p.restart_interval, total_mcus);
  p.num_segments = (total_mcus + p.segment_mcus - 1) / p.segment_mcus;

  // A band must hold a whole number of segments: its MCU count (rows * mcus_x) has to be
  // a multiple of segment_mcus, i.e. rows a multiple of segment_mcus / gcd.
  const int row_unit = p.segment_mcus / std::gcd(p.segment_mcus, p.mcus_x);
  auto band_rows = [&](int pixels) {
    const int target_rows = std::max(1, (pixels + p.mcu_h - 1) / p.mcu_h);
    const int rows = p.restart_interval == 0 ? p.mcus_y  // one segment: one band
                                             : ((target_rows + row_unit - 1) / row_unit) * row_unit;
    return std::min(rows, p.mcus_y);
  };
  p.band_mcu_rows = band_rows(band_rows_hint > 0 ? band_rows_hint : kDefaultBandPixelRows);
  p.first_band_mcu_rows =
      first_band_rows_hint > 0 ? std::min(p.band_mcu_rows, band_rows(first_band_rows_hint)) : p.band_mcu_rows;
  p.num_bands = 1 + (p.mcus_y - p.first_band_mcu_rows + p.band_mcu_rows - 1) / p.band_mcu_rows;

  const uint64_t segment_blocks = static_cast<uint64_t>(p.segment_mcus) * p.blocks_per_mcu;
  // Every byte may need a stuffed zero after it.
  const uint64_t segment_bytes = 2 * ((segment_blocks * kMaxBitsPerBlock + 7) / 8) + 2;
  if (segment_bytes > UINT32_MAX) {
    return InvalidArgument("restart_interval " + std::to_string(params.restart_interval) +
                           " makes an entropy segment too large for this frame size");
  }
  p.segment_capacity = static_cast<uint32_t>(segment_bytes);
  const int band_segments =
      (p.band_mcu_rows * p.mcus_x + p.segment_mcus - 1) / p.segment_mcus + 1;
  p.band_capacity = static_cast<uint64_t>(band_segments) * (p.segment_capacity + 2);

  p.xform = MakeColorXform(frame);
  p.chroma_direct = p.layout.kind != LayoutKind::kPackedRgb &&
                    (1 << p.layout.chroma_shift_x) == hs && (1 << p.layout.chroma_shift_y) == vs &&
                    p.xform.m[1][0] == 0 && p.xform.m[2][0] == 0;
  return p;
}

}  // namespace conveyor
