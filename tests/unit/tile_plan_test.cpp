// The tiling stage on the host: a tile plan writes the same bytes as the rendition
// scaler's own output, inside the cell's rectangle of the sprite and nowhere else, for
// every format; cells must lie inside the sprite on whole chroma samples; a sprite's
// black is the standard's (Y 16 at limited range, 0 at full, chroma 128, RGB 0).
#include <gtest/gtest.h>

#include <vector>

#include "scale_cpu.h"
#include "scale_plan.h"
#include "synthetic_frame.h"
#include "tile_plan.h"

namespace conveyor {
namespace {

const PixelFormat kAllFormats[] = {PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
                                   PixelFormat::kYuv422p, PixelFormat::kYuv444p, PixelFormat::kRgb24,
                                   PixelFormat::kBgr24,   PixelFormat::kRgba,    PixelFormat::kBgra};

TEST(TilePlan, PlacesTheScaledFrameInItsCellAndNowhereElse) {
  constexpr int kCellW = 48, kCellH = 30, kSpriteW = 4 * kCellW, kSpriteH = 3 * kCellH;
  for (PixelFormat f : kAllFormats) {
    SCOPED_TRACE(PixelFormatName(f));
    const testing::SyntheticFrame src = testing::MakeSyntheticFrame(322, 178, f, 7);
    // The reference: the rendition scaler's packed output of the same size.
    const ScalePlan scale = MakeScalePlan(f, 322, 178, kCellW, kCellH).value();
    const ScaledFrame cell = ScaleFrameToOwned(src.view, scale).value();
    const int x = 2 * kCellW, y = kCellH;  // the cell at column 2, row 1
    const ScalePlan tile = MakeTilePlan(f, 322, 178, kCellW, kCellH, kSpriteW, kSpriteH, x, y).value();
    std::vector<uint8_t> sprite(PackedFrameSize(f, kSpriteW, kSpriteH), 0xA5);
    ASSERT_EQ(tile.dst_size, sprite.size());
    ASSERT_TRUE(ScaleFrameOnHost(src.view, tile, sprite.data()).ok());
    const FormatLayout l = LayoutOf(f);
    const PlaneGeometry sg = PackedPlaneGeometry(f, kSpriteW, kSpriteH);
    const PlaneGeometry cg = PackedPlaneGeometry(f, kCellW, kCellH);
    for (int p = 0; p < l.num_planes; ++p) {
      const bool chroma = l.kind != LayoutKind::kPackedRgb && p > 0;
      const int row0 = chroma ? y >> l.chroma_shift_y : y;
      const int channels = l.kind == LayoutKind::kPackedRgb ? l.bytes_per_pixel
                           : l.kind == LayoutKind::kSemiPlanarYuv && p == 1 ? 2
                                                                              : 1;
      const int col0 = (chroma ? x >> l.chroma_shift_x : x) * channels;
      for (int r = 0; r < sg.rows[p]; ++r) {
        for (int b = 0; b < sg.row_bytes[p]; ++b) {
          const uint8_t got = sprite[sg.offset[p] + static_cast<size_t>(r) * sg.row_bytes[p] + b];
          const bool inside = r >= row0 && r < row0 + cg.rows[p] && b >= col0 && b < col0 + cg.row_bytes[p];
          const uint8_t want = inside ? cell.bytes[cg.offset[p] + static_cast<size_t>(r - row0) * cg.row_bytes[p] +
                                                   (b - col0)]
                                      : 0xA5;
          ASSERT_EQ(got, want) << "plane " << p << " row " << r << " byte " << b << (inside ? " (in the cell)" : "");
        }
      }
    }
  }
}

TEST(TilePlan, RefusesCellsOutsideTheSpriteOrAcrossChromaSamples) {
  EXPECT_FALSE(MakeTilePlan(PixelFormat::kYuv420p, 64, 64, 32, 32, 64, 64, 40, 0).ok());   // past the right edge
  EXPECT_FALSE(MakeTilePlan(PixelFormat::kYuv420p, 64, 64, 32, 32, 64, 64, 0, -2).ok());   // above the top
  EXPECT_FALSE(MakeTilePlan(PixelFormat::kYuv420p, 64, 64, 32, 32, 64, 64, 1, 0).ok());    // odd corner, 4:2:0
  EXPECT_FALSE(MakeTilePlan(PixelFormat::kNv12, 64, 64, 31, 32, 64, 64, 0, 0).ok());       // odd width, 4:2:0
  EXPECT_FALSE(MakeTilePlan(PixelFormat::kYuv422p, 64, 64, 32, 32, 64, 64, 3, 0).ok());    // odd x, 4:2:2
  EXPECT_TRUE(MakeTilePlan(PixelFormat::kYuv422p, 64, 64, 32, 31, 64, 64, 0, 1).ok());     // rows: 4:2:2 keeps them
  EXPECT_TRUE(MakeTilePlan(PixelFormat::kRgb24, 64, 64, 31, 31, 64, 64, 33, 33).ok());    // RGB: any pixel
  const Status s = MakeTilePlan(PixelFormat::kYuv420p, 64, 64, 32, 32, 64, 64, 40, 0).status();
  EXPECT_NE(s.message().find("not inside the sprite"), std::string::npos) << s.ToString();
}

TEST(TilePlan, BlackIsTheStandardsBlack) {
  std::vector<uint8_t> yuv(PackedFrameSize(PixelFormat::kYuv420p, 4, 2));
  FillBlack(BlackFill(PixelFormat::kYuv420p, ColorRange::kLimited, 4, 2), yuv.data());
  EXPECT_EQ(yuv, (std::vector<uint8_t>{16, 16, 16, 16, 16, 16, 16, 16, 128, 128, 128, 128}));
  FillBlack(BlackFill(PixelFormat::kYuv420p, ColorRange::kFull, 4, 2), yuv.data());
  EXPECT_EQ(yuv, (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 128, 128, 128, 128}));
  FillBlack(BlackFill(PixelFormat::kYuvj420p, ColorRange::kLimited, 4, 2), yuv.data());  // yuvj is full range
  EXPECT_EQ(yuv[0], 0);
  std::vector<uint8_t> nv12(PackedFrameSize(PixelFormat::kNv12, 2, 2));
  FillBlack(BlackFill(PixelFormat::kNv12, ColorRange::kLimited, 2, 2), nv12.data());
  EXPECT_EQ(nv12, (std::vector<uint8_t>{16, 16, 16, 16, 128, 128}));
  std::vector<uint8_t> rgba(PackedFrameSize(PixelFormat::kRgba, 2, 1), 7);
  FillBlack(BlackFill(PixelFormat::kRgba, ColorRange::kLimited, 2, 1), rgba.data());
  EXPECT_EQ(rgba, std::vector<uint8_t>(8, 0));
}

}  // namespace
}  // namespace conveyor
