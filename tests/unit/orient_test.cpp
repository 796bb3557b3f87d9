// The orientation stage on the host: each of the eight orientations against its own
// definition written out per pixel (rotate 90 clockwise: the destination's row y is the
// source's column y read bottom-up, ...), for every format at odd sizes; the 4:2:2
// transpose's doubled chroma rows; the EXIF numbering (TIFF 6.0, tag 274); and the
// plans' refusals.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "orient_cpu.h"
#include "synthetic_frame.h"

namespace conveyor {
namespace {

// Where destination (x, y) of a W x H source reads from, written per operation rather
// than from the transpose/flip form the stage uses.
using Definition = std::function<void(int W, int H, int x, int y, int* sx, int* sy)>;

struct Named {
  int exif;
  const char* name;
  Definition at;
};

const Named kDefinitions[] = {
    {1, "as stored", [](int, int, int x, int y, int* sx, int* sy) { *sx = x, *sy = y; }},
    {2, "hflip", [](int W, int, int x, int y, int* sx, int* sy) { *sx = W - 1 - x, *sy = y; }},
    {3, "rotate 180", [](int W, int H, int x, int y, int* sx, int* sy) { *sx = W - 1 - x, *sy = H - 1 - y; }},
    {4, "vflip", [](int, int H, int x, int y, int* sx, int* sy) { *sx = x, *sy = H - 1 - y; }},
    // Mirror across the main diagonal.
    {5, "transpose", [](int, int, int x, int y, int* sx, int* sy) { *sx = y, *sy = x; }},
    // Clockwise: the top row of the result is the source's left column, read upwards.
    {6, "rotate 90 clockwise", [](int, int H, int x, int y, int* sx, int* sy) { *sx = y, *sy = H - 1 - x; }},
    // Mirror across the anti-diagonal.
    {7, "transverse", [](int W, int H, int x, int y, int* sx, int* sy) { *sx = W - 1 - y, *sy = H - 1 - x; }},
    // Counter-clockwise: the top row of the result is the source's right column, read down.
    {8, "rotate 270 clockwise", [](int W, int, int x, int y, int* sx, int* sy) { *sx = W - 1 - y, *sy = x; }},
};

const PixelFormat kFormats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                PixelFormat::kYuv444p, PixelFormat::kRgb24,    PixelFormat::kBgr24,
                                PixelFormat::kRgba,    PixelFormat::kBgra};

// Bytes per sample and plane size in samples of plane p of a packed frame.
void PlaneOf(PixelFormat f, int w, int h, int p, int* channels, int* pw, int* ph) {
  const FormatLayout l = LayoutOf(f);
  const PlaneGeometry g = PackedPlaneGeometry(f, w, h);
  *channels = l.kind == LayoutKind::kPackedRgb ? l.bytes_per_pixel : (l.kind == LayoutKind::kSemiPlanarYuv && p == 1) ? 2 : 1;
  *pw = g.row_bytes[p] / *channels;
  *ph = g.rows[p];
}

TEST(Orientation, EveryOrientationMatchesItsDefinitionInEveryFormat) {
  int checked = 0;
  for (PixelFormat f : kFormats) {
    for (const auto& [w, h] : {std::make_pair(1, 1), std::make_pair(17, 9), std::make_pair(33, 47),
                               std::make_pair(130, 71)}) {
      const auto src = testing::MakeSyntheticFrame(w, h, f, 11);
      for (const Named& d : kDefinitions) {
        const std::string what = std::string(PixelFormatName(f)) + " " + std::to_string(w) + "x" +
                                 std::to_string(h) + " " + d.name;
        auto turned = OrientFrameToOwned(src.view, OrientationFromExif(d.exif));
        ASSERT_TRUE(turned.ok()) << what << ": " << turned.status().ToString();
        const bool swaps = d.exif >= 5;
        ASSERT_EQ(turned->view.width, swaps ? h : w) << what;
        ASSERT_EQ(turned->view.height, swaps ? w : h) << what;
        ASSERT_EQ(turned->view.format, f) << what;
        for (int p = 0; p < LayoutOf(f).num_planes; ++p) {
          int c = 0, sw = 0, sh = 0, dw = 0, dh = 0;
          PlaneOf(f, w, h, p, &c, &sw, &sh);
          PlaneOf(f, turned->view.width, turned->view.height, p, &c, &dw, &dh);
          ASSERT_EQ(dw, swaps ? sh : sw) << what << " plane " << p;
          for (int y = 0; y < dh; ++y) {
            for (int x = 0; x < dw; ++x) {
              int sx = 0, sy = 0;
              d.at(sw, sh, x, y, &sx, &sy);
              for (int k = 0; k < c; ++k) {
                const uint8_t want = src.view.plane[p][static_cast<size_t>(sy) * src.view.stride[p] + sx * c + k];
                const uint8_t got = turned->view.plane[p][static_cast<size_t>(y) * turned->view.stride[p] + x * c + k];
                ASSERT_EQ(got, want) << what << " plane " << p << " at " << x << "," << y;
              }
            }
          }
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 8 * 4 * 8);
}

// A transposed 4:2:2 picture would be 4:4:0, which the encoder has no layout for: it
// becomes 4:4:4, each turned chroma row written twice; luma is turned as usual.
TEST(Orientation, Transposed422BecomesA444WithDoubledChromaRows) {
  const int w = 21, h = 10;
  const auto src = testing::MakeSyntheticFrame(w, h, PixelFormat::kYuv422p, 4);
  for (const Named& d : kDefinitions) {
    auto turned = OrientFrameToOwned(src.view, OrientationFromExif(d.exif));
    ASSERT_TRUE(turned.ok()) << d.name;
    if (d.exif < 5) {
      EXPECT_EQ(turned->view.format, PixelFormat::kYuv422p) << d.name;
      continue;
    }
    ASSERT_EQ(turned->view.format, PixelFormat::kYuv444p) << d.name;
    ASSERT_EQ(turned->view.width, h);
    ASSERT_EQ(turned->view.height, w);
    const int cw = (w + 1) / 2;  // source chroma: cw x h
    for (int p = 1; p < 3; ++p) {
      for (int y = 0; y < w; ++y) {
        for (int x = 0; x < h; ++x) {
          int sx = 0, sy = 0;
          d.at(cw, h, x, y / 2, &sx, &sy);  // the 4:4:0 turn of the chroma, row y/2
          ASSERT_EQ(turned->view.plane[p][static_cast<size_t>(y) * turned->view.stride[p] + x],
                    src.view.plane[p][static_cast<size_t>(sy) * src.view.stride[p] + sx])
              << d.name << " plane " << p << " at " << x << "," << y;
        }
      }
    }
  }
}

TEST(Orientation, ExifNumbersDegreesAndMirrors) {
  const int degrees[9] = {0, 0, 0, 180, 180, 270, 90, 90, 270};
  const bool mirrors[9] = {false, false, true, false, true, true, false, true, false};
  for (int e = 1; e <= 8; ++e) {
    const Orientation o = OrientationFromExif(e);
    EXPECT_EQ(ExifOrientation(o), e);
    EXPECT_EQ(OrientationDegrees(o), degrees[e]) << e;
    EXPECT_EQ(OrientationMirrors(o), mirrors[e]) << e;
    EXPECT_EQ(o.identity(), e == 1);
  }
  EXPECT_TRUE(OrientationFromExif(0).identity());
  EXPECT_TRUE(OrientationFromExif(9).identity());
}

TEST(Orientation, PlansRefuseBadSizesAndFramesNotTheirs) {
  EXPECT_EQ(MakeOrientPlan(PixelFormat::kYuv420p, 0, 10, OrientationFromExif(6)).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeOrientPlan(PixelFormat::kYuv420p, 10, kMaxDimension + 1, OrientationFromExif(6)).status().code(),
            StatusCode::kInvalidArgument);
  auto plan = MakeOrientPlan(PixelFormat::kYuv420p, 64, 48, OrientationFromExif(6));
  ASSERT_TRUE(plan.ok());
  const auto other = testing::MakeSyntheticFrame(48, 64, PixelFormat::kYuv420p, 1);
  std::vector<uint8_t> out(plan->dst_size);
  EXPECT_EQ(OrientFrameOnHost(other.view, *plan, out.data()).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace conveyor
