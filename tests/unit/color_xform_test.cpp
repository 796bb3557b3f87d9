// Colour conversion: identities, reference colours and the choice of matrix and range
// from the frame.
#include "color_xform.h"

#include <gtest/gtest.h>

namespace conveyor {
namespace {

struct Ycc {
  int y, cb, cr;
};

Ycc Convert(const ColorXform& x, int a, int b, int d) {
  Ycc o;
  o.y = ClampToByte((XformDot(x, 0, a, b, d) + x.bias[0]) >> kColorFracBits);
  o.cb = ClampToByte((XformDot(x, 1, a, b, d) + x.bias[1]) >> kColorFracBits);
  o.cr = ClampToByte((XformDot(x, 2, a, b, d) + x.bias[2]) >> kColorFracBits);
  return o;
}

FrameView View(PixelFormat f, ColorMatrix m, ColorRange r) {
  FrameView v;
  v.format = f;
  v.matrix = m;
  v.range = r;
  return v;
}

TEST(ColorXform, FullRangeBt601IsIdentity) {
  const ColorXform x = MakeColorXform(View(PixelFormat::kYuv444p, ColorMatrix::kBt601, ColorRange::kFull));
  for (int v = 0; v < 256; v += 5) {
    const Ycc o = Convert(x, v, 255 - v, v / 2);
    EXPECT_EQ(o.y, v);
    EXPECT_EQ(o.cb, 255 - v);
    EXPECT_EQ(o.cr, v / 2);
  }
  // yuvj420p is full range whatever the range field says.
  const ColorXform j = MakeColorXform(View(PixelFormat::kYuvj420p, ColorMatrix::kBt601, ColorRange::kLimited));
  EXPECT_EQ(Convert(j, 10, 20, 30).y, 10);
}

TEST(ColorXform, LimitedRangeExpandsToFull) {
  const ColorXform x = MakeColorXform(View(PixelFormat::kYuv420p, ColorMatrix::kBt601, ColorRange::kLimited));
  EXPECT_EQ(Convert(x, 16, 128, 128).y, 0);
  EXPECT_EQ(Convert(x, 235, 128, 128).y, 255);
  EXPECT_EQ(Convert(x, 126, 128, 128).y, 128);  // (126-16)*255/219 = 128.08
  EXPECT_EQ(Convert(x, 16, 240, 16).cb, 255);
  EXPECT_LE(Convert(x, 16, 240, 16).cr, 1);  // -112 * 255 / 224 + 128 = 0.5
}

TEST(ColorXform, Bt709RedBecomesJfifRed) {
  // Pure red in limited BT.709 is Y=63, Cb=102, Cr=240; JFIF red is (76, 85, 255).
  const ColorXform x = MakeColorXform(View(PixelFormat::kYuv420p, ColorMatrix::kBt709, ColorRange::kLimited));
  const Ycc o = Convert(x, 63, 102, 240);
  EXPECT_NEAR(o.y, 76, 1);
  EXPECT_NEAR(o.cb, 85, 1);
  EXPECT_NEAR(o.cr, 255, 1);
  // The same bytes read as BT.601 are a different colour: the matrix matters.
  const ColorXform wrong = MakeColorXform(View(PixelFormat::kYuv420p, ColorMatrix::kBt601, ColorRange::kLimited));
  EXPECT_GT(std::abs(Convert(wrong, 63, 102, 240).y - 76), 5);
}

TEST(ColorXform, RgbToJfif) {
  const ColorXform x = MakeColorXform(View(PixelFormat::kRgb24, ColorMatrix::kBt709, ColorRange::kLimited));
  const Ycc white = Convert(x, 255, 255, 255);
  EXPECT_EQ(white.y, 255);
  EXPECT_EQ(white.cb, 128);
  EXPECT_EQ(white.cr, 128);
  const Ycc blue = Convert(x, 0, 0, 255);
  EXPECT_EQ(blue.y, 29);  // 0.114 * 255
  EXPECT_EQ(blue.cb, 255);
}

}  // namespace
}  // namespace conveyor
