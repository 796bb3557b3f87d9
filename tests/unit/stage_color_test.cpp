// The CPU's row-wise colour stage against the per-sample functions the GPU runs, over
// every format, subsampling and colour signalling, at odd sizes so edge padding counts.
#include <gtest/gtest.h>

#include "cpu_encoder.h"
#include "stage_color.h"
#include "synthetic_frame.h"

namespace conveyor {
namespace {

template <LayoutKind K>
void ReferenceBand(const EncodePlan& p, const SourcePlanes& s, int band, std::vector<uint8_t> out[3]) {
  const int y0 = p.BandFirstMcuRow(band) * p.comp[0].rows_per_mcu_row;
  for (int y = 0; y < p.BandMcuRows(band) * p.comp[0].rows_per_mcu_row; ++y)
    for (int x = 0; x < p.comp[0].plane_w; ++x)
      out[0][static_cast<size_t>(y) * p.comp[0].plane_w + x] = LumaSample<K>(p, s, x, y0 + y);
  const int c0 = p.BandFirstMcuRow(band) * p.comp[1].rows_per_mcu_row;
  for (int y = 0; y < p.BandMcuRows(band) * p.comp[1].rows_per_mcu_row; ++y)
    for (int x = 0; x < p.comp[1].plane_w; ++x) {
      const size_t i = static_cast<size_t>(y) * p.comp[1].plane_w + x;
      ChromaSample<K>(p, s, x, c0 + y, &out[1][i], &out[2][i]);
    }
}

void Reference(const EncodePlan& p, const SourcePlanes& s, int band, std::vector<uint8_t> out[3]) {
  switch (p.layout.kind) {
    case LayoutKind::kPlanarYuv: return ReferenceBand<LayoutKind::kPlanarYuv>(p, s, band, out);
    case LayoutKind::kSemiPlanarYuv: return ReferenceBand<LayoutKind::kSemiPlanarYuv>(p, s, band, out);
    case LayoutKind::kPackedRgb: return ReferenceBand<LayoutKind::kPackedRgb>(p, s, band, out);
  }
}

TEST(StageColor, HostRowPathEqualsPerSampleDefinition) {
  const PixelFormat formats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                 PixelFormat::kYuv422p, PixelFormat::kYuv444p, PixelFormat::kRgb24,
                                 PixelFormat::kBgr24,   PixelFormat::kRgba,    PixelFormat::kBgra};
  const int sizes[][2] = {{1, 1}, {17, 9}, {33, 47}, {130, 70}};
  int checked = 0, direct = 0;
  for (PixelFormat f : formats)
    for (auto [w, h] : sizes)
      for (ColorMatrix m : {ColorMatrix::kBt601, ColorMatrix::kBt709})
        for (Subsampling ss : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
          const auto frame = testing::MakeSyntheticFrame(w, h, f, w * 31 + h, m);
          EncodeParams params;
          params.subsampling = ss;
          EncodePlan plan = MakeEncodePlan(frame.view, params, 8).value();
          const SourcePlanes src = SourcePlanesOf(frame.view);
          for (bool force_generic : {false, true}) {
            if (force_generic && !plan.chroma_direct) continue;
            EncodePlan ref_plan = plan;
            if (force_generic) ref_plan.chroma_direct = false;  // the shortcut against the box average
            direct += plan.chroma_direct;
            for (int band = 0; band < plan.num_bands; ++band) {
              std::vector<uint8_t> got[3], want[3];
              for (int c = 0; c < 3; ++c) {
                got[c].assign(plan.BandPlaneSize(c), 0xAA);
                want[c].assign(plan.BandPlaneSize(c), 0x55);
              }
              uint8_t* const planes[3] = {got[0].data(), got[1].data(), got[2].data()};
              ColorBandOnHost(plan, src, band, planes);
              Reference(ref_plan, src, band, want);
              const size_t used[3] = {static_cast<size_t>(plan.BandMcuRows(band)) * plan.comp[0].rows_per_mcu_row * plan.comp[0].plane_w,
                                      static_cast<size_t>(plan.BandMcuRows(band)) * plan.comp[1].rows_per_mcu_row * plan.comp[1].plane_w, 0};
              for (int c = 0; c < 3; ++c) {
                const size_t n = c == 0 ? used[0] : used[1];
                for (size_t i = 0; i < n; ++i) {
                  ASSERT_EQ(got[c][i], want[c][i]) << PixelFormatName(f) << " " << w << "x" << h << " ss"
                                                   << SubsamplingName(ss) << " band " << band << " comp " << c
                                                   << " index " << i << (force_generic ? " (box average)" : "");
                }
              }
              ++checked;
            }
          }
        }
  EXPECT_GT(direct, 0);
  std::printf("checked %d bands (%d with the direct-chroma shortcut)\n", checked, direct);
}

}  // namespace
}  // namespace conveyor
