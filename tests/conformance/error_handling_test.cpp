// Bad input never crashes or encodes: MakePackedFrameView, MakeEncodePlan and Encode
// return kInvalidArgument with a message that names the offending field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// A small valid rgb24 frame and the encoder to feed it to.
class ErrorHandlingTest : public ::testing::Test {
 protected:
  static constexpr int kW = 17, kH = 9;
  ErrorHandlingTest()
      : enc_(0), rgb_(conveyor::PackedFrameSize(PixelFormat::kRgb24, kW, kH), 128) {}

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

  conveyor::CpuJpegEncoder enc_;
  std::vector<uint8_t> rgb_;
};

TEST_F(ErrorHandlingTest, ValidInputEncodes) {
  EncodeParams params;
  auto out = enc_.Encode(ValidView(), params);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_GT(out->size(), 600u);
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
  for (int q : {1, 100}) {
    EncodeParams p;
    p.quality = q;
    auto out = enc_.Encode(ValidView(), p);
    EXPECT_TRUE(out.ok()) << "quality " << q << ": " << out.status().ToString();
  }
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
