// Input formats and colour signalling. One scene (testsrc2; smptehdbars for the colour
// label tests) is rendered as rgb24 and converted by ffmpeg into every input format the
// encoder takes; each must encode, decode with both decoders and come back close to the
// rgb24 rendering. For YUV inputs the frame's matrix and range labels must drive the
// conversion: the correct label gives a high PSNR, a wrong one a clearly lower PSNR.
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "conformance_checks.h"
#include "conformance_util.h"
#include "cpu_encoder.h"

namespace conformance {
namespace {

using conveyor::ColorMatrix;
using conveyor::ColorRange;
using conveyor::EncodeParams;
using conveyor::PixelFormat;
using conveyor::Subsampling;

constexpr int kQuality = 95;

struct Encoded {
  std::vector<uint8_t> jpeg;
  double psnr = 0;  // libjpeg-turbo RGB decode vs the rgb24 rendering
};

// Encodes `data` (packed `format`) with the given labels, checks both decoders, and
// measures PSNR against `reference_rgb`.
void EncodeAndMeasure(const std::vector<uint8_t>& data, int w, int h, PixelFormat format,
                      ColorMatrix matrix, ColorRange range, Subsampling sub,
                      const std::vector<uint8_t>& reference_rgb, Encoded* out) {
  conveyor::CpuJpegEncoder enc(0);
  EncodeParams params;
  params.quality = kQuality;
  params.subsampling = sub;
  auto jpeg = EncodePacked(enc, data, w, h, format, params, matrix, range);
  ASSERT_TRUE(jpeg.ok()) << jpeg.status().ToString();
  BothDecodes dec;
  ASSERT_TRUE(DecodeWithBoth(*jpeg, w, h, sub, &dec, /*compare_planes=*/true));
  EXPECT_LE(dec.plane_max_diff, 2) << "the two decoders disagree";
  out->psnr = Psnr(dec.turbo_rgb.plane[0], reference_rgb);
  out->jpeg = std::move(jpeg).value();
}

// ---------------------------------------------------------------------------------------
// Every input format

struct FormatCase {
  PixelFormat format;
  std::string filter;  // ffmpeg -vf from rgb24
  ColorMatrix matrix;
  ColorRange range;
};

std::vector<FormatCase> AllFormats() {
  const std::string bt601_tv = "scale=out_color_matrix=bt601:out_range=tv:flags=accurate_rnd,format=";
  const std::string bt601_pc = "scale=out_color_matrix=bt601:out_range=pc:flags=accurate_rnd,format=";
  return {
      {PixelFormat::kYuv420p, bt601_tv + "yuv420p", ColorMatrix::kBt601, ColorRange::kLimited},
      {PixelFormat::kYuvj420p, bt601_pc + "yuvj420p", ColorMatrix::kBt601, ColorRange::kFull},
      {PixelFormat::kNv12, bt601_tv + "nv12", ColorMatrix::kBt601, ColorRange::kLimited},
      {PixelFormat::kYuv422p, bt601_tv + "yuv422p", ColorMatrix::kBt601, ColorRange::kLimited},
      {PixelFormat::kYuv444p, bt601_tv + "yuv444p", ColorMatrix::kBt601, ColorRange::kLimited},
      {PixelFormat::kRgb24, "format=rgb24", ColorMatrix::kBt601, ColorRange::kLimited},
      {PixelFormat::kBgr24, "format=bgr24", ColorMatrix::kBt601, ColorRange::kLimited},
      {PixelFormat::kRgba, "format=rgba", ColorMatrix::kBt601, ColorRange::kLimited},
      {PixelFormat::kBgra, "format=bgra", ColorMatrix::kBt601, ColorRange::kLimited},
  };
}

// Lowest PSNR (dB) against the rgb24 rendering at q95, by frame size, input chroma
// resolution and output subsampling. testsrc2's sharp colour edges cap 4:2:x output
// (rgb24 input gets the same figures). Measured, 1280x720: out 420 31.1-31.6, out 422
// 32.9-33.5, out 444 42.3 (4:2:0 input) / 46.6 (4:2:2) / 47.3-48.5 (4:4:4, RGB);
// 317x179: 25.7-27.3, 26.7-28.8, 29.6 / 31.8 / 45.2-46.0. Floors are ~1.5-2 dB below.
double MinFormatPsnr(int width, PixelFormat f, Subsampling s) {
  const bool small = width < 640;
  if (s == Subsampling::k420) return small ? 24.0 : 29.5;
  if (s == Subsampling::k422) return small ? 25.0 : 31.0;
  const conveyor::FormatLayout l = conveyor::LayoutOf(f);
  if (l.kind == conveyor::LayoutKind::kPackedRgb || (l.chroma_shift_x == 0 && l.chroma_shift_y == 0)) {
    return small ? 43.5 : 45.5;
  }
  if (l.chroma_shift_y == 0) return small ? 30.0 : 44.5;  // 4:2:2 input
  return small ? 28.0 : 40.5;                             // 4:2:0 input
}

struct SizeParam {
  int w, h;
};

void PrintTo(const SizeParam& p, std::ostream* os) { *os << p.w << "x" << p.h; }

class InputFormatTest : public ::testing::TestWithParam<SizeParam> {};

TEST_P(InputFormatTest, EveryFormatEncodesAndMatchesTheRgbRendering) {
  const int w = GetParam().w, h = GetParam().h;
  auto rgb = RenderRgb(Content::kTestsrc2, w, h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();

  for (const FormatCase& fc : AllFormats()) {
    auto data = ConvertRgb(Content::kTestsrc2, w, h, fc.filter, fc.format);
    ASSERT_TRUE(data.ok()) << data.status().message();
    for (Subsampling sub : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
      SCOPED_TRACE(std::string(conveyor::PixelFormatName(fc.format)) + " -> " +
                   conveyor::SubsamplingName(sub));
      Encoded e;
      EncodeAndMeasure(*data, w, h, fc.format, fc.matrix, fc.range, sub, *rgb, &e);
      if (HasFatalFailure()) return;
      std::printf("[input-format] %4dx%-4d %-8s -> %s q%d  PSNR %6.2f  bytes %zu\n", w, h,
                  conveyor::PixelFormatName(fc.format), conveyor::SubsamplingName(sub), kQuality,
                  e.psnr, e.jpeg.size());
      EXPECT_GE(e.psnr, MinFormatPsnr(w, fc.format, sub));
    }
  }
  std::fflush(stdout);
}

// Packed RGB layouts carry the same pixels, so they must give the same file as rgb24,
// byte for byte (catches a swapped channel index or a wrong bytes-per-pixel).
TEST_P(InputFormatTest, PackedRgbLayoutsGiveIdenticalFiles) {
  const int w = GetParam().w, h = GetParam().h;
  auto rgb = RenderRgb(Content::kTestsrc2, w, h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();
  conveyor::CpuJpegEncoder enc(0);
  for (Subsampling sub : {Subsampling::k420, Subsampling::k444}) {
    EncodeParams params;
    params.quality = kQuality;
    params.subsampling = sub;
    auto want = EncodePacked(enc, *rgb, w, h, PixelFormat::kRgb24, params);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    for (PixelFormat f : {PixelFormat::kBgr24, PixelFormat::kRgba, PixelFormat::kBgra}) {
      SCOPED_TRACE(conveyor::PixelFormatName(f));
      auto data = ConvertRgb(Content::kTestsrc2, w, h, std::string("format=") +
                                                           conveyor::PixelFormatName(f), f);
      ASSERT_TRUE(data.ok()) << data.status().message();
      auto got = EncodePacked(enc, *data, w, h, f, params);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_TRUE(*got == *want) << "differs from the rgb24 encode";
    }
  }
}

// nv12 is yuv420p with interleaved chroma: repacking the same samples must not change
// the file.
TEST_P(InputFormatTest, Nv12MatchesYuv420pByteForByte) {
  const int w = GetParam().w, h = GetParam().h;
  auto yuv = ConvertRgb(Content::kTestsrc2, w, h,
                        "scale=out_color_matrix=bt709:out_range=tv:flags=accurate_rnd,"
                        "format=yuv420p",
                        PixelFormat::kYuv420p);
  ASSERT_TRUE(yuv.ok()) << yuv.status().message();
  const conveyor::PlaneGeometry g = conveyor::PackedPlaneGeometry(PixelFormat::kYuv420p, w, h);
  std::vector<uint8_t> nv12(conveyor::PackedFrameSize(PixelFormat::kNv12, w, h));
  std::copy(yuv->begin(), yuv->begin() + g.offset[1], nv12.begin());
  const size_t chroma = static_cast<size_t>(g.row_bytes[1]) * g.rows[1];
  for (size_t i = 0; i < chroma; ++i) {
    nv12[g.offset[1] + 2 * i] = (*yuv)[g.offset[1] + i];
    nv12[g.offset[1] + 2 * i + 1] = (*yuv)[g.offset[2] + i];
  }
  conveyor::CpuJpegEncoder enc(0);
  for (Subsampling sub : {Subsampling::k420, Subsampling::k422, Subsampling::k444}) {
    SCOPED_TRACE(conveyor::SubsamplingName(sub));
    EncodeParams params;
    params.quality = kQuality;
    params.subsampling = sub;
    auto a = EncodePacked(enc, *yuv, w, h, PixelFormat::kYuv420p, params, ColorMatrix::kBt709,
                          ColorRange::kLimited);
    auto b = EncodePacked(enc, nv12, w, h, PixelFormat::kNv12, params, ColorMatrix::kBt709,
                          ColorRange::kLimited);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_TRUE(*a == *b);
  }
}

std::string SizeName(const ::testing::TestParamInfo<SizeParam>& info) {
  return std::to_string(info.param.w) + "x" + std::to_string(info.param.h);
}

INSTANTIATE_TEST_SUITE_P(Sizes, InputFormatTest,
                         ::testing::Values(SizeParam{1280, 720}, SizeParam{317, 179}), SizeName);

// ---------------------------------------------------------------------------------------
// Colour signalling: the matrix and range come from the frame

struct Label {
  ColorMatrix matrix;
  ColorRange range;
};

std::string LabelName(Label l) {
  return std::string(conveyor::ColorMatrixName(l.matrix)) + "/" + conveyor::ColorRangeName(l.range);
}

struct SignallingCase {
  std::string name;
  PixelFormat format;
  std::string filter;
  Label truth;
  std::vector<Label> wrong;
};

void PrintTo(const SignallingCase& c, std::ostream* os) { *os << c.name; }

// smptehdbars (flat saturated bars) rendered as rgb24, converted by ffmpeg with a known
// matrix and range, encoded at q95. Measured with the correct label: 36.9-37.3 dB at 420,
// 48.8-53.9 dB at 444 output. The closest wrong label (BT.709 vs BT.2020) is 2.8 dB lower
// at 420 and 11.7 dB lower at 444; wrong range or BT.601/709 swaps are 6-24 dB lower.
constexpr double kMinCorrect420 = 35.0;
constexpr double kMinCorrect444 = 46.0;
constexpr double kMinGap420 = 2.0;
constexpr double kMinGap444 = 8.0;

class ColorSignallingTest : public ::testing::TestWithParam<SignallingCase> {};

TEST_P(ColorSignallingTest, CorrectLabelWinsClearly) {
  const SignallingCase& c = GetParam();
  constexpr int w = 1280, h = 720;
  auto rgb = RenderRgb(Content::kSmpteBars, w, h);
  ASSERT_TRUE(rgb.ok()) << rgb.status().message();
  auto data = ConvertRgb(Content::kSmpteBars, w, h, c.filter, c.format);
  ASSERT_TRUE(data.ok()) << data.status().message();

  for (Subsampling sub : {Subsampling::k420, Subsampling::k444}) {
    SCOPED_TRACE(conveyor::SubsamplingName(sub));
    Encoded right;
    EncodeAndMeasure(*data, w, h, c.format, c.truth.matrix, c.truth.range, sub, *rgb, &right);
    if (HasFatalFailure()) return;
    std::printf("[colour] %-22s %s as %-14s PSNR %6.2f (correct label)\n", c.name.c_str(),
                conveyor::SubsamplingName(sub), LabelName(c.truth).c_str(), right.psnr);
    EXPECT_GE(right.psnr, sub == Subsampling::k444 ? kMinCorrect444 : kMinCorrect420)
        << "correctly labelled " << LabelName(c.truth);
    for (const Label& l : c.wrong) {
      Encoded wrong;
      EncodeAndMeasure(*data, w, h, c.format, l.matrix, l.range, sub, *rgb, &wrong);
      if (HasFatalFailure()) return;
      std::printf("[colour] %-22s %s as %-14s PSNR %6.2f\n", c.name.c_str(),
                  conveyor::SubsamplingName(sub), LabelName(l).c_str(), wrong.psnr);
      EXPECT_LE(wrong.psnr, right.psnr - (sub == Subsampling::k444 ? kMinGap444 : kMinGap420))
          << "labelled " << LabelName(l) << " instead of " << LabelName(c.truth)
          << ": the label does not drive the conversion";
    }
  }
  std::fflush(stdout);
}

// yuvj420p is full range by definition: the frame's range label must not matter.
TEST(ColorRangeLabelTest, Yuvj420pIgnoresTheRangeLabel) {
  constexpr int w = 1280, h = 720;
  auto data = ConvertRgb(Content::kSmpteBars, w, h,
                         "scale=flags=accurate_rnd:out_color_matrix=bt601:out_range=pc,"
                         "format=yuvj420p",
                         PixelFormat::kYuvj420p);
  ASSERT_TRUE(data.ok()) << data.status().message();
  conveyor::CpuJpegEncoder enc(0);
  EncodeParams params;
  params.quality = kQuality;
  auto full = EncodePacked(enc, *data, w, h, PixelFormat::kYuvj420p, params, ColorMatrix::kBt601,
                           ColorRange::kFull);
  auto limited = EncodePacked(enc, *data, w, h, PixelFormat::kYuvj420p, params,
                              ColorMatrix::kBt601, ColorRange::kLimited);
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  EXPECT_TRUE(*full == *limited);
  // And it is not the same as treating the samples as limited-range yuv420p.
  auto as_yuv420p = EncodePacked(enc, *data, w, h, PixelFormat::kYuv420p, params,
                                 ColorMatrix::kBt601, ColorRange::kLimited);
  ASSERT_TRUE(as_yuv420p.ok());
  EXPECT_FALSE(*as_yuv420p == *full);
}

const std::string kScale = "scale=flags=accurate_rnd:out_color_matrix=";

INSTANTIATE_TEST_SUITE_P(
    Labels, ColorSignallingTest,
    ::testing::Values(
        SignallingCase{"yuv420p_bt709_limited", PixelFormat::kYuv420p,
                       kScale + "bt709:out_range=tv,format=yuv420p",
                       {ColorMatrix::kBt709, ColorRange::kLimited},
                       {{ColorMatrix::kBt601, ColorRange::kLimited},
                        {ColorMatrix::kBt709, ColorRange::kFull},
                        {ColorMatrix::kBt2020, ColorRange::kLimited}}},
        SignallingCase{"yuv420p_bt601_full", PixelFormat::kYuv420p,
                       kScale + "bt601:out_range=pc,format=yuv420p",
                       {ColorMatrix::kBt601, ColorRange::kFull},
                       {{ColorMatrix::kBt601, ColorRange::kLimited},
                        {ColorMatrix::kBt709, ColorRange::kFull}}},
        SignallingCase{"yuv444p_bt2020_limited", PixelFormat::kYuv444p,
                       kScale + "bt2020:out_range=tv,format=yuv444p",
                       {ColorMatrix::kBt2020, ColorRange::kLimited},
                       {{ColorMatrix::kBt709, ColorRange::kLimited},
                        {ColorMatrix::kBt2020, ColorRange::kFull}}},
        SignallingCase{"yuvj420p_bt601", PixelFormat::kYuvj420p,
                       kScale + "bt601:out_range=pc,format=yuvj420p",
                       {ColorMatrix::kBt601, ColorRange::kFull},
                       {{ColorMatrix::kBt709, ColorRange::kFull},
                        {ColorMatrix::kBt2020, ColorRange::kFull}}}),
    [](const ::testing::TestParamInfo<SignallingCase>& info) { return info.param.name; });

}  // namespace
}  // namespace conformance
