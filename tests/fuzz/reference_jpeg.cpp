// See reference_jpeg.h. Slow on purpose: one call per sample and per block.
#include "reference_jpeg.h"

#include "jfif_writer.h"
#include "jpeg_tables.h"
#include "stage_dct.h"
#include "stage_huffman.h"

namespace conveyor::fuzz {
namespace {

template <LayoutKind K>
void ColorBand(const EncodePlan& p, const SourcePlanes& s, int band, std::vector<uint8_t> planes[3]) {
  const int y0 = p.BandFirstMcuRow(band) * p.comp[0].rows_per_mcu_row;
  for (int y = 0; y < p.BandMcuRows(band) * p.comp[0].rows_per_mcu_row; ++y)
    for (int x = 0; x < p.comp[0].plane_w; ++x)
      planes[0][static_cast<size_t>(y) * p.comp[0].plane_w + x] = LumaSample<K>(p, s, x, y0 + y);
  const int c0 = p.BandFirstMcuRow(band) * p.comp[1].rows_per_mcu_row;
  for (int y = 0; y < p.BandMcuRows(band) * p.comp[1].rows_per_mcu_row; ++y)
    for (int x = 0; x < p.comp[1].plane_w; ++x) {
      const size_t i = static_cast<size_t>(y) * p.comp[1].plane_w + x;
      ChromaSample<K>(p, s, x, c0 + y, &planes[1][i], &planes[2][i]);
    }
}

void ColorBand(const EncodePlan& p, const SourcePlanes& s, int band, std::vector<uint8_t> planes[3]) {
  switch (p.layout.kind) {
    case LayoutKind::kPlanarYuv: return ColorBand<LayoutKind::kPlanarYuv>(p, s, band, planes);
    case LayoutKind::kSemiPlanarYuv: return ColorBand<LayoutKind::kSemiPlanarYuv>(p, s, band, planes);
    case LayoutKind::kPackedRgb: return ColorBand<LayoutKind::kPackedRgb>(p, s, band, planes);
  }
}

}  // namespace

std::vector<uint8_t> ReferenceJpeg(const EncodePlan& plan, const SourcePlanes& source) {
  EncodeTables tables;
  BuildEncodeTables(plan.quality, &tables);
  // The shortcut is claimed to equal the box average; the reference does not take it.
  EncodePlan box = plan;
  box.chroma_direct = false;

  std::vector<uint8_t> jpeg;
  AppendJfifHeader(plan, &jpeg);
  std::vector<uint8_t> segment(plan.segment_capacity);
  for (int band = 0; band < plan.num_bands; ++band) {
    std::vector<uint8_t> planes[3];
    for (int c = 0; c < 3; ++c) planes[c].assign(plan.BandPlaneSize(c), 0);
    ColorBand(box, source, band, planes);

    std::vector<int16_t> levels(plan.BandBlocks() * 64, 0);
    const int blocks = plan.BandMcus(band) * plan.blocks_per_mcu;
    for (int i = 0; i < blocks; ++i) {
      const BlockOrigin o = BandBlockOrigin(plan, i);
      const int w = plan.comp[o.comp].plane_w;
      int32_t work[64];
      for (int r = 0; r < 8; ++r) FdctRow(planes[o.comp].data() + static_cast<size_t>(o.y + r) * w + o.x, work + r * 8);
      for (int col = 0; col < 8; ++col) {
        FdctColumnQuantize(work, col, tables.quant[plan.comp[o.comp].quant], tables.zigzag_position,
                           levels.data() + static_cast<size_t>(i) * 64);
      }
    }

    const int first = plan.BandFirstSegment(band);
    for (int s = first; s < first + plan.BandSegments(band); ++s) {
      const uint32_t n = EncodeSegment(plan, tables, levels.data(), band, s, segment.data(), plan.segment_capacity);
      if (n == UINT32_MAX) __builtin_trap();  // segment_capacity is the worst case; never too small
      jpeg.insert(jpeg.end(), segment.begin(), segment.begin() + n);
      uint8_t marker[2];
      jpeg.insert(jpeg.end(), marker, marker + WriteRestartMarker(plan, s, marker));
    }
  }
  AppendJfifTrailer(&jpeg);
  return jpeg;
}

}  // namespace conveyor::fuzz
