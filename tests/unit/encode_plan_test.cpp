// Plan geometry: MCU grid, segments and bands, and that bands always end on segment
// boundaries whatever the restart interval.
#include "encode_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace conveyor {
namespace {

FrameView Frame(int w, int h, PixelFormat f, std::vector<uint8_t>* storage) {
  storage->assign(PackedFrameSize(f, w, h), 0);
  return MakePackedFrameView(storage->data(), storage->size(), w, h, f).value();
}

TEST(EncodePlan, GeometryOf1080p420) {
  std::vector<uint8_t> buf;
  EncodeParams p;
  const EncodePlan plan = MakeEncodePlan(Frame(1920, 1080, PixelFormat::kYuv420p, &buf), p).value();
  EXPECT_EQ(plan.mcus_x, 120);
  EXPECT_EQ(plan.mcus_y, 68);
  EXPECT_EQ(plan.blocks_per_mcu, 6);
  EXPECT_EQ(plan.comp[0].plane_w, 1920);
  EXPECT_EQ(plan.comp[1].plane_w, 960);
  EXPECT_EQ(plan.restart_interval, 16);
  EXPECT_EQ(plan.num_segments, 120 * 68 / 16);
}

TEST(EncodePlan, BandsCoverTheFrameOnSegmentBoundaries) {
  std::vector<uint8_t> buf;
  const int sizes[][2] = {{1, 1}, {17, 9}, {1919, 1079}, {16384, 16}, {333, 777}};
  for (auto [w, h] : sizes) {
    for (int restart : {kRestartAuto, 0, 1, 7, 16, 1000}) {
      for (Subsampling ss : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
        for (int hint : {0, 8, 64}) {
          for (int first : {0, 1, 16}) {
            EncodeParams p;
            p.restart_interval = restart;
            p.subsampling = ss;
            const EncodePlan plan =
                MakeEncodePlan(Frame(w, h, PixelFormat::kRgb24, &buf), p, hint, first).value();
            int segments = 0, mcus = 0;
            ASSERT_LE(plan.first_band_mcu_rows, plan.band_mcu_rows);
            for (int b = 0; b < plan.num_bands; ++b) {
              ASSERT_EQ(plan.BandFirstSegment(b), segments) << w << "x" << h << " r" << restart;
              ASSERT_GT(plan.BandMcus(b), 0) << "band " << b << " of " << plan.num_bands;
              ASSERT_LE(static_cast<size_t>(plan.BandMcus(b)) * plan.blocks_per_mcu, plan.BandBlocks());
              if (b + 1 < plan.num_bands) {
                ASSERT_EQ(plan.BandMcus(b) % plan.segment_mcus, 0);
              }
              segments += plan.BandSegments(b);
              mcus += plan.BandMcus(b);
            }
            EXPECT_EQ(segments, plan.num_segments);
            EXPECT_EQ(mcus, plan.TotalMcus());
          }
        }
      }
    }
  }
}

TEST(EncodePlan, ASmallFirstBandThenEvenBands) {
  std::vector<uint8_t> buf;
  EncodeParams p;  // 3840x2160 4:2:0: 240 x 135 MCUs, segments of 16 (row unit 1)
  const EncodePlan plan = MakeEncodePlan(Frame(3840, 2160, PixelFormat::kYuv420p, &buf), p, 23 * 16, 4 * 16).value();
  EXPECT_EQ(plan.first_band_mcu_rows, 4);
  EXPECT_EQ(plan.band_mcu_rows, 23);
  EXPECT_EQ(plan.num_bands, 7);  // 4 + 5 x 23 + 16
  EXPECT_EQ(plan.BandFirstMcuRow(1), 4);
  EXPECT_EQ(plan.BandMcuRows(6), 135 - 4 - 5 * 23);
  // A first band hint larger than the bands is the bands' size.
  const EncodePlan even = MakeEncodePlan(Frame(3840, 2160, PixelFormat::kYuv420p, &buf), p, 23 * 16, 40 * 16).value();
  EXPECT_EQ(even.first_band_mcu_rows, 23);
  EXPECT_EQ(even.num_bands, 6);
}

TEST(EncodePlan, RejectsBadParameters) {
  std::vector<uint8_t> buf;
  const FrameView f = Frame(64, 64, PixelFormat::kYuv420p, &buf);
  EncodeParams p;
  p.quality = 0;
  EXPECT_EQ(MakeEncodePlan(f, p).status().code(), StatusCode::kInvalidArgument);
  p.quality = 101;
  EXPECT_NE(MakeEncodePlan(f, p).status().message().find("quality"), std::string::npos);
  p.quality = 85;
  p.restart_interval = 70000;
  EXPECT_NE(MakeEncodePlan(f, p).status().message().find("restart_interval"), std::string::npos);
  FrameView bad = f;
  bad.width = 0;
  EXPECT_NE(MakeEncodePlan(bad, EncodeParams{}).status().message().find("width"), std::string::npos);
  bad = f;
  bad.stride[1] = 3;
  EXPECT_NE(MakeEncodePlan(bad, EncodeParams{}).status().message().find("stride"), std::string::npos);
  bad = f;
  bad.plane[2] = nullptr;
  EXPECT_NE(MakeEncodePlan(bad, EncodeParams{}).status().message().find("plane 2"), std::string::npos);
  EXPECT_FALSE(MakePackedFrameView(buf.data(), buf.size() - 1, 64, 64, PixelFormat::kYuv420p).ok());
  EXPECT_FALSE(MakePackedFrameView(buf.data(), buf.size(), 16385, 1, PixelFormat::kYuv420p).ok());
  EXPECT_FALSE(ParsePixelFormat("yuv410p").ok());
}

}  // namespace
}  // namespace conveyor
