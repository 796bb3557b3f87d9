// Host execution of the encoder stages.
#include "cpu_encoder.h"

#include "jfif_writer.h"
#include "stage_dct.h"
#include "stage_huffman.h"

namespace conveyor {
namespace {

// Scratch reused by each thread across bands and frames.
struct HostBandScratch {
  std::vector<uint8_t> planes[3];
  std::vector<int16_t> levels;
  std::vector<uint8_t> segment;
};

void ColorStage(const EncodePlan& p, const SourcePlanes& s, int band, HostBandScratch* scratch) {
  const int rows_y = p.BandMcuRows(band) * p.comp[0].rows_per_mcu_row;
  const int y0 = p.BandFirstMcuRow(band) * p.comp[0].rows_per_mcu_row;
  uint8_t* luma = scratch->planes[0].data();
  for (int y = 0; y < rows_y; ++y) {
    uint8_t* row = luma + static_cast<size_t>(y) * p.comp[0].plane_w;
    for (int x = 0; x < p.comp[0].plane_w; ++x) row[x] = LumaSample(p, s, x, y0 + y);
  }
  const int rows_c = p.BandMcuRows(band) * p.comp[1].rows_per_mcu_row;
  const int c0 = p.BandFirstMcuRow(band) * p.comp[1].rows_per_mcu_row;
  for (int y = 0; y < rows_c; ++y) {
    const size_t off = static_cast<size_t>(y) * p.comp[1].plane_w;
    uint8_t* cb = scratch->planes[1].data() + off;
    uint8_t* cr = scratch->planes[2].data() + off;
    for (int x = 0; x < p.comp[1].plane_w; ++x) ChromaSample(p, s, x, c0 + y, &cb[x], &cr[x]);
  }
}

void DctStage(const EncodePlan& p, const EncodeTables& t, int band, HostBandScratch* scratch) {
  const int blocks = p.BandMcus(band) * p.blocks_per_mcu;
  int32_t work[64];
  for (int i = 0; i < blocks; ++i) {
    const BlockOrigin o = BandBlockOrigin(p, i);
    const int w = p.comp[o.comp].plane_w;
    const uint8_t* src = scratch->planes[o.comp].data() + static_cast<size_t>(o.y) * w + o.x;
    for (int r = 0; r < 8; ++r) FdctRow(src + r * w, work + r * 8);
    int16_t* levels = scratch->levels.data() + static_cast<size_t>(i) * 64;
    const QuantEntry* q = t.quant[p.comp[o.comp].quant];
    for (int col = 0; col < 8; ++col) FdctColumnQuantize(work, col, q, levels);
  }
}

}  // namespace

SourcePlanes SourcePlanesOf(const FrameView& frame) {
  SourcePlanes s{};
  for (int i = 0; i < 3; ++i) {
    s.plane[i] = frame.plane[i];
    s.stride[i] = frame.stride[i];
  }
  return s;
}

void EncodeBandOnHost(const EncodePlan& plan, const EncodeTables& tables,
                      const SourcePlanes& source, int band, std::vector<uint8_t>* out) {
  thread_local HostBandScratch scratch;
  for (int c = 0; c < 3; ++c) scratch.planes[c].resize(plan.BandPlaneSize(c));
  scratch.levels.resize(plan.BandBlocks() * 64);

  ColorStage(plan, source, band, &scratch);
  DctStage(plan, tables, band, &scratch);

  // Stages 3 and 4: code each segment into scratch, append it and its RST marker.
  if (scratch.segment.size() < plan.segment_capacity) scratch.segment.resize(plan.segment_capacity);
  const int first = plan.BandFirstSegment(band);
  for (int s = first; s < first + plan.BandSegments(band); ++s) {
    // The plan sizes segment_capacity for the worst case, so this never overflows.
    const uint32_t n = EncodeSegment(plan, tables, scratch.levels.data(), band, s,
                                     scratch.segment.data(), plan.segment_capacity);
    out->insert(out->end(), scratch.segment.data(), scratch.segment.data() + n);
    uint8_t marker[2];
    out->insert(out->end(), marker, marker + WriteRestartMarker(plan, s, marker));
  }
}

CpuJpegEncoder::CpuJpegEncoder(int threads) : pool_(threads) {}

StatusOr<std::vector<uint8_t>> CpuJpegEncoder::Encode(const FrameView& frame,
                                                      const EncodeParams& params,
                                                      int band_rows_hint) {
  ASSIGN_OR_RETURN(EncodePlan plan, MakeEncodePlan(frame, params, band_rows_hint));
  EncodeTables tables;
  BuildEncodeTables(plan.quality, &tables);
  const SourcePlanes source = SourcePlanesOf(frame);

  std::vector<std::vector<uint8_t>> bands(plan.num_bands);
  pool_.ParallelFor(plan.num_bands, [&](int b) {
    EncodeBandOnHost(plan, tables, source, b, &bands[b]);
  });

  std::vector<uint8_t> jpeg;
  size_t total = 0;
  for (const auto& b : bands) total += b.size();
  jpeg.reserve(total + 1024);
  AppendJfifHeader(plan, &jpeg);
  for (const auto& b : bands) jpeg.insert(jpeg.end(), b.begin(), b.end());
  AppendJfifTrailer(&jpeg);
  return jpeg;
}

}  // namespace conveyor
