// Bad input never crashes or encodes: MakePackedFrameView, MakeEncodePlan and Encode
// return kInvalidArgument with a message that names the offending field. The valid
// controls beside them must decode, with both decoders, to the picture that went in.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "conformance_checks.h"
#include "conformance_util.h"
#include "cpu_encoder.h"
#include "encode_plan.h"

namespace conformance {
namespace {

using conveyor::EncodeParams;
using conveyor::FrameView;
using conveyor::PixelFormat;
using conveyor::Status;
using conveyor::StatusCode;
using conveyor::Subsampling;

constexpr PixelFormat kAllFormats[] = {
    PixelFormat::kYuv420p, PixelFormat::kYuvj420p, PixelFormat::kNv12,
    PixelFormat::kYuv422p, PixelFormat::kYuv444p,  PixelFormat::kRgb24,
    PixelFormat::kBgr24,   PixelFormat::kRgba,     PixelFormat::kBgra,
};

::testing::AssertionResult IsInvalidArgumentNaming(const Status& s, const std::string& field) {
  if (s.ok()) return ::testing::AssertionFailure() << "returned OK";
  if (s.code() != StatusCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << "code " << conveyor::StatusCodeName(s.code())
                                         << " instead of INVALID_ARGUMENT: " << s.message();
  }
  if (s.message().find(field) == std::string::npos) {
    return ::testing::AssertionFailure() << "message does not mention '" << field
                                         << "': " << s.message();
  }
  return ::testing::AssertionSuccess();
}

template <typename T>
Status StatusOf(const conveyor::StatusOr<T>& s) {
  return s.ok() ? conveyor::OkStatus() : s.status();
}

// Ours may trail libjpeg at the same settings by this much (as in libjpeg_compare_test).
constexpr double kMaxPsnrDeficitDb = 0.3;

// A small valid rgb24 frame and the encoder to feed it to. The frame holds three
// different ramps, so that a decode of the wrong picture (flat, transposed, channels
// swapped) cannot match it.
class ErrorHandlingTest : public ::testing::Test {
 protected:
  static constexpr int kW = 17, kH = 9;
  ErrorHandlingTest() : enc_(0), rgb_(conveyor::PackedFrameSize(PixelFormat::kRgb24, kW, kH)) {
    for (int y = 0; y < kH; ++y) {
      for (int x = 0; x < kW; ++x) {
        uint8_t* p = &rgb_[(static_cast<size_t>(y) * kW + x) * 3];
        p[0] = static_cast<uint8_t>(16 + 12 * x);
        p[1] = static_cast<uint8_t>(16 + 24 * y);
        p[2] = static_cast<uint8_t>(200 - 6 * (x + y));
      }
    }
  }

  FrameView ValidView() {
    auto v = conveyor::MakePackedFrameView(rgb_.data(), rgb_.size(), kW, kH, PixelFormat::kRgb24);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.value();
  }

  // The same check through the planner and through the encoder.
  void ExpectRejected(const FrameView& frame, const EncodeParams& params,
                      const std::string& field) {
    EXPECT_TRUE(IsInvalidArgumentNaming(StatusOf(conveyor::MakeEncodePlan(frame, params)), field))
        << "MakeEncodePlan";
    EXPECT_TRUE(IsInvalidArgumentNaming(StatusOf(enc_.Encode(frame, params)), field)) << "Encode";
  }

  // Encodes the valid frame with `params` and checks the result: both decoders take it
  // without a warning at kW x kH and the asked subsampling, and libjpeg-turbo's RGB
  // decode is as close to the source as libjpeg's own file at the same settings. Returns
  // that PSNR (dB), or -1 when a check failed.
  double EncodeAndCheckDecodes(const EncodeParams& params) {
    auto plan = conveyor::MakeEncodePlan(ValidView(), params);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    auto out = enc_.Encode(ValidView(), params);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!plan.ok() || !out.ok()) return -1;
    BothDecodes dec;
    const ::testing::AssertionResult decoded = DecodeWithBoth(*out, kW, kH, params.subsampling, &dec);
    EXPECT_TRUE(decoded);
    if (!decoded) return -1;
    auto ref = LibjpegEncodeRgb(rgb_.data(), kW, kH, params.quality, params.subsampling, plan->restart_interval);
    EXPECT_TRUE(ref.ok()) << ref.status().message();
    if (!ref.ok()) return -1;
    auto ref_rgb = TurboDecodeRgb(*ref);
    EXPECT_TRUE(ref_rgb.ok()) << ref_rgb.status().message();
    if (!ref_rgb.ok()) return -1;
    const double psnr = Psnr(dec.turbo_rgb.plane[0], rgb_);
    const double psnr_ref = Psnr(ref_rgb->plane[0], rgb_);
    EXPECT_GE(psnr, psnr_ref - kMaxPsnrDeficitDb) << "quality " << params.quality << ": libjpeg gets " << psnr_ref;
    std::printf("[error-handling] quality %d: %zu bytes, %.2f dB (libjpeg %.2f dB)\n", params.quality, out->size(),
                psnr, psnr_ref);
    return psnr;
  }

  conveyor::CpuJpegEncoder enc_;
  std::vector<uint8_t> rgb_;
};

TEST_F(ErrorHandlingTest, ValidInputEncodes) {
  const double psnr = EncodeAndCheckDecodes(EncodeParams{});
  // Measured 34.7 dB (libjpeg the same); a flat or garbled picture lands far below.
  EXPECT_GE(psnr, 30.0);
}

TEST_F(ErrorHandlingTest, PackedFrameViewRejectsZeroWidth) {
  EXPECT_TRUE(IsInvalidArgumentNaming(
      StatusOf(conveyor::MakePackedFrameView(rgb_.data(), rgb_.size(), 0, kH, PixelFormat::kRgb24)),
      "width"));
}

TEST_F(ErrorHandlingTest, PackedFrameViewRejectsZeroHeight) {
  EXPECT_TRUE(IsInvalidArgumentNaming(
      StatusOf(conveyor::MakePackedFrameView(rgb_.data(), rgb_.size(), kW, 0, PixelFormat::kRgb24)),
      "height"));
}

TEST_F(ErrorHandlingTest, PackedFrameViewRejectsNegativeDimensions) {
  EXPECT_TRUE(IsInvalidArgumentNaming(
      StatusOf(conveyor::MakePackedFrameView(rgb_.data(), rgb_.size(), -17, kH, PixelFormat::kRgb24)),
      "width"));
  EXPECT_TRUE(IsInvalidArgumentNaming(
      StatusOf(conveyor::MakePackedFrameView(rgb_.data(), rgb_.size(), kW, -9, PixelFormat::kRgb24)),
      "height"));
}

TEST_F(ErrorHandlingTest, PackedFrameViewRejectsDimensionsAboveTheLimit) {
  std::vector<uint8_t> big(conveyor::PackedFrameSize(PixelFormat::kRgb24, 16385, 16));
  auto w = conveyor::MakePackedFrameView(big.data(), big.size(), 16385, 16, PixelFormat::kRgb24);
  EXPECT_TRUE(IsInvalidArgumentNaming(StatusOf(w), "width"));
  EXPECT_TRUE(IsInvalidArgumentNaming(StatusOf(w), "16384")) << "message should state the limit";
  auto h = conveyor::MakePackedFrameView(big.data(), big.size(), 16, 16385, PixelFormat::kRgb24);
  EXPECT_TRUE(IsInvalidArgumentNaming(StatusOf(h), "height"));
  // The limit itself is fine.
  auto ok = conveyor::MakePackedFrameView(big.data(), big.size(), 16384, 16, PixelFormat::kRgb24);
  EXPECT_TRUE(ok.ok()) << ok.status().ToString();
}

TEST_F(ErrorHandlingTest, PackedFrameViewRejectsABufferOneByteShort) {
  for (PixelFormat f : kAllFormats) {
    SCOPED_TRACE(conveyor::PixelFormatName(f));
    const size_t need = conveyor::PackedFrameSize(f, kW, kH);
    std::vector<uint8_t> buf(need, 0);
    EXPECT_TRUE(conveyor::MakePackedFrameView(buf.data(), need, kW, kH, f).ok());
    const Status s = StatusOf(conveyor::MakePackedFrameView(buf.data(), need - 1, kW, kH, f));
    EXPECT_TRUE(IsInvalidArgumentNaming(s, "buffer"));
    EXPECT_TRUE(IsInvalidArgumentNaming(s, std::to_string(need))) << "should state the need";
  }
}

TEST_F(ErrorHandlingTest, PackedFrameViewRejectsANullBuffer) {
  EXPECT_TRUE(IsInvalidArgumentNaming(
      StatusOf(conveyor::MakePackedFrameView(nullptr, rgb_.size(), kW, kH, PixelFormat::kRgb24)),
      "buffer"));
}

TEST_F(ErrorHandlingTest, PackedFrameViewRejectsAnUnknownPixelFormat) {
  EXPECT_TRUE(IsInvalidArgumentNaming(
      StatusOf(conveyor::MakePackedFrameView(rgb_.data(), rgb_.size(), kW, kH,
                                             static_cast<PixelFormat>(99))),
      "pixel format"));
}

TEST_F(ErrorHandlingTest, EncodeRejectsQualityZero) {
  EncodeParams p;
  p.quality = 0;
  ExpectRejected(ValidView(), p, "quality");
}

TEST_F(ErrorHandlingTest, EncodeRejectsQuality101) {
  EncodeParams p;
  p.quality = 101;
  ExpectRejected(ValidView(), p, "quality");
}

TEST_F(ErrorHandlingTest, EncodeAcceptsQualityBounds) {
  EncodeParams lowest, highest;
  lowest.quality = 1;
  highest.quality = 100;
  const double psnr_lowest = EncodeAndCheckDecodes(lowest);
  const double psnr_highest = EncodeAndCheckDecodes(highest);
  // Each bound is applied, not clamped to some other quality: 1 is coarse but still the
  // picture (measured 19.4 dB), 100 is as good as 4:2:0 of this 17x9 frame gets (37.3 dB).
  EXPECT_GE(psnr_lowest, 15.0);
  EXPECT_GE(psnr_highest, 33.0);
  EXPECT_GE(psnr_highest, psnr_lowest + 10.0);
}

TEST_F(ErrorHandlingTest, EncodeRejectsNegativeRestartInterval) {
  EncodeParams p;
  p.restart_interval = -5;
  ExpectRejected(ValidView(), p, "restart_interval");
}

TEST_F(ErrorHandlingTest, EncodeRejectsRestartIntervalAbove16Bits) {
  EncodeParams p;
  p.restart_interval = 65536;
  ExpectRejected(ValidView(), p, "restart_interval");
}

TEST_F(ErrorHandlingTest, EncodeRejectsAnUnknownSubsampling) {
  EncodeParams p;
  p.subsampling = static_cast<Subsampling>(7);
  ExpectRejected(ValidView(), p, "subsampling");
}

TEST_F(ErrorHandlingTest, EncodeRejectsBadHandBuiltFrames) {
  EncodeParams p;
  {
    FrameView v = ValidView();
    v.width = 0;
    SCOPED_TRACE("width 0");
    ExpectRejected(v, p, "width");
  }
  {
    FrameView v = ValidView();
    v.height = 0;
    SCOPED_TRACE("height 0");
    ExpectRejected(v, p, "height");
  }
  {
    FrameView v = ValidView();
    v.width = 16385;
    SCOPED_TRACE("width 16385");
    ExpectRejected(v, p, "width");
  }
  {
    FrameView v = ValidView();
    v.format = static_cast<PixelFormat>(99);
    SCOPED_TRACE("format 99");
    ExpectRejected(v, p, "pixel format");
  }
  {
    FrameView v = ValidView();
    v.plane[0] = nullptr;
    SCOPED_TRACE("missing plane");
    ExpectRejected(v, p, "plane");
  }
  {
    FrameView v = ValidView();
    v.stride[0] = kW * 3 - 1;
    SCOPED_TRACE("short stride");
    ExpectRejected(v, p, "stride");
  }
  {
    // A yuv420p view whose chroma planes are missing.
    FrameView v;
    v.width = kW;
    v.height = kH;
    v.format = PixelFormat::kYuv420p;
    v.plane[0] = rgb_.data();
    v.stride[0] = kW;
    SCOPED_TRACE("yuv420p without chroma");
    ExpectRejected(v, p, "plane");
  }
}

}  // namespace
}  // namespace conformance
