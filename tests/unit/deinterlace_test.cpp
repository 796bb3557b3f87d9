// The deinterlace stage on the host: the kept field's lines are cur's in every format and
// size and for both field orders, a progressive still picture comes out nearly as it went
// in, planes one line high, the plan's geometry, and its refusals. The comparison with
// FFmpeg's yadif itself is in tests/media/deinterlace_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "deinterlace_cpu.h"
#include "synthetic_frame.h"

namespace conveyor {
namespace {

const PixelFormat kFormats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                PixelFormat::kYuv422p, PixelFormat::kYuv444p};

std::string Describe(PixelFormat f, int w, int h, bool tff) {
  return std::string(PixelFormatName(f)) + " " + std::to_string(w) + "x" + std::to_string(h) + (tff ? " tff" : " bff");
}

TEST(Deinterlace, KeptFieldLinesAreCursInEveryFormat) {
  int checked = 0;
  for (PixelFormat f : kFormats) {
    for (const auto& [w, h] : {std::make_pair(1, 1), std::make_pair(2, 2), std::make_pair(17, 9),
                               std::make_pair(33, 47), std::make_pair(130, 71)}) {
      const auto prev = testing::MakeSyntheticFrame(w, h, f, 1);
      const auto cur = testing::MakeSyntheticFrame(w, h, f, 2);
      const auto next = testing::MakeSyntheticFrame(w, h, f, 3);
      for (const bool tff : {true, false}) {
        const std::string what = Describe(f, w, h, tff);
        auto out = DeinterlaceFrameToOwned(prev.view, cur.view, next.view, tff);
        ASSERT_TRUE(out.ok()) << what << ": " << out.status().ToString();
        ASSERT_EQ(out->view.format, f);
        ASSERT_EQ(out->view.width, w);
        ASSERT_EQ(out->view.height, h);
        const PlaneGeometry g = PackedPlaneGeometry(f, w, h);
        int interpolated_differ = 0;
        for (int p = 0; p < LayoutOf(f).num_planes; ++p) {
          for (int y = 0; y < g.rows[p]; ++y) {
            const uint8_t* want = cur.view.plane[p] + static_cast<size_t>(y) * cur.view.stride[p];
            const uint8_t* got = out->view.plane[p] + static_cast<size_t>(y) * out->view.stride[p];
            const bool same = std::equal(got, got + g.row_bytes[p], want);
            if ((y & 1) == (tff ? 0 : 1)) {
              ASSERT_TRUE(same) << what << ": kept line " << y << " of plane " << p << " is not cur's";
            } else {
              interpolated_differ += same ? 0 : 1;
            }
          }
        }
        // Three unrelated frames: the interpolated lines of a frame of some size are new.
        if (h >= 9) {
          EXPECT_GT(interpolated_differ, 0) << what;
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 5 * 5 * 2);
}

// A smooth picture, the same in both fields and in all three frames: the temporal
// prediction is the missing line itself and there is no motion, so little changes.
TEST(Deinterlace, AProgressiveStillPictureComesOutNearlyAsItWentIn) {
  const int w = 96, h = 64;
  for (PixelFormat f : kFormats) {
    std::vector<uint8_t> bytes(PackedFrameSize(f, w, h));
    const PlaneGeometry g = PackedPlaneGeometry(f, w, h);
    for (int p = 0; p < LayoutOf(f).num_planes; ++p) {
      for (int y = 0; y < g.rows[p]; ++y) {
        for (int b = 0; b < g.row_bytes[p]; ++b) {
          const double v = 128 + 90 * std::sin(b / 11.0 + p) * std::cos(y / 7.0);
          bytes[g.offset[p] + static_cast<size_t>(y) * g.row_bytes[p] + b] = static_cast<uint8_t>(std::lround(v));
        }
      }
    }
    auto still = MakePackedFrameView(bytes.data(), bytes.size(), w, h, f);
    ASSERT_TRUE(still.ok());
    for (const bool tff : {true, false}) {
      auto out = DeinterlaceFrameToOwned(*still, *still, *still, tff);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      double sq = 0;
      int worst = 0;
      for (size_t i = 0; i < bytes.size(); ++i) {
        const int d = std::abs(out->bytes[i] - bytes[i]);
        sq += d * d;
        worst = std::max(worst, d);
      }
      const double psnr = sq == 0 ? 99.0 : 10 * std::log10(255.0 * 255.0 * bytes.size() / sq);
      std::printf("still %s: PSNR %.1f dB, largest difference %d\n", Describe(f, w, h, tff).c_str(), psnr, worst);
      EXPECT_GE(psnr, 50.0) << Describe(f, w, h, tff);
      EXPECT_LE(worst, 8) << Describe(f, w, h, tff);
    }
  }
}

// yadif needs three lines; below that the stage reads the nearest line, and a plane one
// line high that is interpolated comes out as cur's line.
TEST(Deinterlace, APlaneOneLineHighComesOutAsCursLine) {
  for (PixelFormat f : kFormats) {
    const auto prev = testing::MakeSyntheticFrame(9, 1, f, 4);
    const auto cur = testing::MakeSyntheticFrame(9, 1, f, 5);
    const auto next = testing::MakeSyntheticFrame(9, 1, f, 6);
    for (const bool tff : {true, false}) {
      auto out = DeinterlaceFrameToOwned(prev.view, cur.view, next.view, tff);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(out->bytes, cur.bytes) << Describe(f, 9, 1, tff);
    }
  }
}

TEST(Deinterlace, PlanLaysOutEachPlaneAtItsOwnSize) {
  auto nv12 = MakeDeinterlacePlan(PixelFormat::kNv12, 33, 17, false);
  ASSERT_TRUE(nv12.ok());
  EXPECT_EQ(nv12->num_planes, 2);
  EXPECT_EQ(nv12->plane[0].w, 33);
  EXPECT_EQ(nv12->plane[0].h, 17);
  EXPECT_EQ(nv12->plane[0].channels, 1);
  EXPECT_EQ(nv12->plane[1].w, 17);
  EXPECT_EQ(nv12->plane[1].h, 9);
  EXPECT_EQ(nv12->plane[1].channels, 2);
  EXPECT_FALSE(nv12->top_field_first);
  EXPECT_EQ(nv12->dst_size, PackedFrameSize(PixelFormat::kNv12, 33, 17));
  auto p422 = MakeDeinterlacePlan(PixelFormat::kYuv422p, 33, 17, true);
  ASSERT_TRUE(p422.ok());
  EXPECT_EQ(p422->num_planes, 3);
  EXPECT_EQ(p422->plane[2].w, 17);
  EXPECT_EQ(p422->plane[2].h, 17);
  EXPECT_EQ(p422->dst_offset[2], PackedPlaneGeometry(PixelFormat::kYuv422p, 33, 17).offset[2]);
}

TEST(Deinterlace, PlansRefusePackedRgbBadSizesAndFramesNotTheirs) {
  for (PixelFormat f : {PixelFormat::kRgb24, PixelFormat::kBgr24, PixelFormat::kRgba, PixelFormat::kBgra}) {
    EXPECT_EQ(MakeDeinterlacePlan(f, 64, 48, true).status().code(), StatusCode::kInvalidArgument)
        << PixelFormatName(f);
  }
  EXPECT_EQ(MakeDeinterlacePlan(PixelFormat::kYuv420p, 0, 10, true).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeDeinterlacePlan(PixelFormat::kYuv420p, 10, -2, true).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeDeinterlacePlan(PixelFormat::kYuv420p, kMaxDimension + 1, 10, true).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(MakeDeinterlacePlan(PixelFormat::kYuv420p, kMaxDimension, 1, true).ok());

  auto plan = MakeDeinterlacePlan(PixelFormat::kYuv420p, 64, 48, true);
  ASSERT_TRUE(plan.ok());
  const auto good = testing::MakeSyntheticFrame(64, 48, PixelFormat::kYuv420p, 1);
  const auto other_size = testing::MakeSyntheticFrame(48, 64, PixelFormat::kYuv420p, 1);
  const auto other_format = testing::MakeSyntheticFrame(64, 48, PixelFormat::kYuv444p, 1);
  std::vector<uint8_t> out(plan->dst_size);
  EXPECT_TRUE(DeinterlaceFrameOnHost(good.view, good.view, good.view, *plan, out.data()).ok());
  EXPECT_EQ(DeinterlaceFrameOnHost(other_size.view, good.view, good.view, *plan, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DeinterlaceFrameOnHost(good.view, other_format.view, good.view, *plan, out.data()).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DeinterlaceFrameOnHost(good.view, good.view, other_size.view, *plan, out.data()).code(),
            StatusCode::kInvalidArgument);
  FrameView missing = good.view;
  missing.plane[2] = nullptr;
  EXPECT_FALSE(DeinterlaceFrameOnHost(good.view, good.view, missing, *plan, out.data()).ok());
}

}  // namespace
}  // namespace conveyor
