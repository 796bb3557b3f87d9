// FrameConverter: which formats pass through untouched, what the others become, and that
// converted pixels match FFmpeg's own conversion; colour signalling survives the mapping.
#include "frame_convert.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "media_test_util.h"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
}

namespace {

using conveyor::ColorMatrix;
using conveyor::ColorRange;
using conveyor::OkStatus;
using conveyor::PackedFrameSize;
using conveyor::PixelFormat;
using conveyor::Status;
using conveyor::StatusCode;
using conveyor::media::ContainerDecoder;
using conveyor::media::ConvertPath;
using conveyor::media::DecodedFrame;
using conveyor::media::EncoderFormatFor;
using conveyor::media::FrameConverter;
using conveyor::media::ColorOf;
using conveyor::media::PassThroughFormat;
using media_test::DecodeFile;
using media_test::DecodeRun;
using media_test::DecodeSetup;
using media_test::MakeMedia;
using media_test::TestSource;

TEST(FrameConvert, EncoderFormatsPassThrough) {
  EXPECT_EQ(PassThroughFormat(AV_PIX_FMT_YUV420P), PixelFormat::kYuv420p);
  EXPECT_EQ(PassThroughFormat(AV_PIX_FMT_YUVJ420P), PixelFormat::kYuvj420p);
  EXPECT_EQ(PassThroughFormat(AV_PIX_FMT_NV12), PixelFormat::kNv12);
  EXPECT_EQ(PassThroughFormat(AV_PIX_FMT_YUVJ422P), PixelFormat::kYuv422p);  // range travels in the view
  EXPECT_EQ(PassThroughFormat(AV_PIX_FMT_YUVJ444P), PixelFormat::kYuv444p);
  EXPECT_EQ(PassThroughFormat(AV_PIX_FMT_BGR0), PixelFormat::kBgra);
  EXPECT_EQ(PassThroughFormat(AV_PIX_FMT_RGB24), PixelFormat::kRgb24);
  EXPECT_FALSE(PassThroughFormat(AV_PIX_FMT_YUV420P10LE).has_value());
  EXPECT_FALSE(PassThroughFormat(AV_PIX_FMT_GBRP).has_value());
}

TEST(FrameConvert, OtherFormatsConvertToTheNearestEncoderFormat) {
  const std::pair<AVPixelFormat, PixelFormat> cases[] = {
      {AV_PIX_FMT_YUV420P10LE, PixelFormat::kYuv420p}, {AV_PIX_FMT_YUV422P10LE, PixelFormat::kYuv422p},
      {AV_PIX_FMT_YUV444P12LE, PixelFormat::kYuv444p}, {AV_PIX_FMT_YUVA420P, PixelFormat::kYuv420p},
      {AV_PIX_FMT_YUV411P, PixelFormat::kYuv422p},     {AV_PIX_FMT_YUVJ440P, PixelFormat::kYuv420p},
      {AV_PIX_FMT_NV21, PixelFormat::kYuv420p},        {AV_PIX_FMT_P010LE, PixelFormat::kNv12},  // narrowed (hw_decode_test)
      {AV_PIX_FMT_GRAY8, PixelFormat::kYuv420p},       {AV_PIX_FMT_GBRP, PixelFormat::kRgb24},
      {AV_PIX_FMT_RGB48LE, PixelFormat::kRgb24},       {AV_PIX_FMT_PAL8, PixelFormat::kRgb24},
  };
  for (const auto& [from, to] : cases) {
    auto got = EncoderFormatFor(from);
    ASSERT_TRUE(got.ok()) << av_get_pix_fmt_name(from);
    EXPECT_EQ(*got, to) << av_get_pix_fmt_name(from);
  }
  EXPECT_EQ(EncoderFormatFor(AV_PIX_FMT_CUDA).status().code(), StatusCode::kUnimplemented);
}

// Decodes the first frame of `path` (any codec) and hands it to `check`.
DecodeRun WithFirstFrame(const std::string& path, const std::function<Status(DecodedFrame&)>& check) {
  DecodeSetup setup;
  setup.options.video_codecs = {};  // FFV1 and raw video in NUT: lossless test sources
  setup.options.input_formats.clear();
  bool done = false;
  setup.on_frame = [&](ContainerDecoder&, DecodedFrame& f) -> Status {
    if (done) return OkStatus();
    done = true;
    return check(f);
  };
  return DecodeFile(path, setup);
}

// Luma (and chroma) of the converter's 10 -> 8 bit output against FFmpeg's own
// conversion (ffmpeg -pix_fmt yuv420p) of the same lossless file: both dither, with
// different rounding, so they agree within a level or two.
TEST(FrameConvert, TenBitConvertsLikeFfmpeg) {
  auto path =
      MakeMedia("ten.mkv", TestSource(), {"-frames:v", "1", "-c:v", "ffv1", "-pix_fmt", "yuv420p10le"});
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  const std::string ref_path = media_test::TempDir() + "/ten_ref.yuv";
  ASSERT_TRUE(media_test::Ffmpeg({"-i", *path, "-pix_fmt", "yuv420p", "-f", "rawvideo", ref_path}).ok());
  auto ref = media_test::ReadFile(ref_path);
  ASSERT_TRUE(ref.ok());
  ASSERT_EQ(ref->size(), PackedFrameSize(PixelFormat::kYuv420p, 320, 240));

  FrameConverter converter;
  const DecodeRun run = WithFirstFrame(*path, [&](DecodedFrame& f) -> Status {
    EXPECT_EQ(f.format, AV_PIX_FMT_YUV420P10LE);
    ASSIGN_OR_RETURN(auto out, converter.Convert(*f.frame));
    EXPECT_EQ(out.path, ConvertPath::kConverted);
    EXPECT_EQ(out.view.format, PixelFormat::kYuv420p);
    EXPECT_EQ(out.view.range, ColorRange::kLimited);
    std::vector<uint8_t> packed(PackedFrameSize(out.view.format, 320, 240));
    conveyor::CopyToPackedLayout(out.view, packed.data());
    double sum = 0;
    int worst = 0;
    for (size_t i = 0; i < packed.size(); ++i) {
      const int d = std::abs(int{packed[i]} - int{(*ref)[i]});
      sum += d;
      worst = std::max(worst, d);
    }
    EXPECT_LE(worst, 2);
    EXPECT_LT(sum / static_cast<double>(packed.size()), 0.6);
    std::printf("10-bit -> 8-bit against ffmpeg: mean |d| %.3f, max %d\n",
                sum / static_cast<double>(packed.size()), worst);
    return OkStatus();
  });
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
}

// Odd sizes into a caller buffer of exactly PackedFrameSize bytes (AddressSanitizer
// catches a write past it), and a buffer one byte short is refused.
TEST(FrameConvert, ConvertsIntoAnExactCallerBuffer) {
  // Cropped in RGB: a crop in a subsampled format would round to even sizes.
  auto path = MakeMedia("odd.mkv", TestSource(322, 242) + ",format=rgb24,crop=321:241:0:0",
                        {"-frames:v", "1", "-c:v", "ffv1", "-pix_fmt", "yuv422p10le"});
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  FrameConverter converter;
  const DecodeRun run = WithFirstFrame(*path, [&](DecodedFrame& f) -> Status {
    EXPECT_EQ(f.width, 321);
    EXPECT_EQ(f.height, 241);
    const size_t need = PackedFrameSize(PixelFormat::kYuv422p, 321, 241);
    std::vector<uint8_t> buffer(need);
    ASSIGN_OR_RETURN(auto out, converter.Convert(*f.frame, buffer.data(), buffer.size()));
    EXPECT_EQ(out.view.format, PixelFormat::kYuv422p);
    EXPECT_EQ(out.view.plane[0], buffer.data());
    EXPECT_TRUE(conveyor::ValidateFrame(out.view).ok());
    std::vector<uint8_t> small(need - 1);
    EXPECT_EQ(converter.Convert(*f.frame, small.data(), small.size()).status().code(),
              StatusCode::kInvalidArgument);
    return OkStatus();
  });
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
}

// Planar RGB converts to rgb24 with exactly the values of the packed RGB that passes through.
TEST(FrameConvert, PlanarRgbRepacksExactly) {
  // Raw video in NUT: the decoder hands out exactly the stored layout.
  auto packed = MakeMedia("bgr0.nut", TestSource() + ",format=rgb24",
                          {"-frames:v", "1", "-c:v", "rawvideo", "-pix_fmt", "bgr0"});
  auto planar = MakeMedia("gbrp.nut", TestSource() + ",format=rgb24",
                          {"-frames:v", "1", "-c:v", "rawvideo", "-pix_fmt", "gbrp"});
  ASSERT_TRUE(packed.ok() && planar.ok());
  std::vector<uint8_t> rgb_direct, rgb_converted;
  FrameConverter converter;
  auto grab = [&](std::vector<uint8_t>* dst, ConvertPath expected) {
    return [&, dst, expected](DecodedFrame& f) -> Status {
      ASSIGN_OR_RETURN(auto out, converter.Convert(*f.frame));
      EXPECT_EQ(out.path, expected) << av_get_pix_fmt_name(f.format);
      const auto layout = conveyor::LayoutOf(out.view.format);
      for (int y = 0; y < out.view.height; ++y) {
        const uint8_t* row = out.view.plane[0] + static_cast<ptrdiff_t>(y) * out.view.stride[0];
        for (int x = 0; x < out.view.width; ++x) {
          const uint8_t* px = row + x * layout.bytes_per_pixel;
          dst->insert(dst->end(), {px[layout.r_index], px[layout.g_index], px[layout.b_index]});
        }
      }
      return OkStatus();
    };
  };
  ASSERT_TRUE(WithFirstFrame(*packed, grab(&rgb_direct, ConvertPath::kPassThrough)).status.ok());
  ASSERT_TRUE(WithFirstFrame(*planar, grab(&rgb_converted, ConvertPath::kConverted)).status.ok());
  ASSERT_EQ(rgb_direct.size(), 320u * 240u * 3u);
  EXPECT_TRUE(rgb_direct == rgb_converted);
}

// Colour signalling from the bitstream: BT.709 full range (H.264 then decodes to yuvj420p),
// and an unsignalled SD stream, whose matrix is guessed as BT.601.
TEST(FrameConvert, KeepsMatrixAndRange) {
  if (!media_test::HasEncoder("libx264")) GTEST_SKIP() << "this ffmpeg has no libx264 encoder";
  auto tagged = MakeMedia("bt709_full.mkv", TestSource(),
                          {"-frames:v", "1", "-vf", "scale=out_color_matrix=bt709:out_range=pc", "-c:v",
                           "libx264", "-preset", "ultrafast", "-colorspace", "bt709", "-color_range", "pc"});
  ASSERT_TRUE(tagged.ok()) << tagged.status().ToString();
  FrameConverter converter;
  auto run = WithFirstFrame(*tagged, [&](DecodedFrame& f) -> Status {
    EXPECT_TRUE(f.color.matrix_signalled);
    EXPECT_EQ(f.color.matrix, ColorMatrix::kBt709);
    EXPECT_EQ(f.color.range, ColorRange::kFull);
    ASSIGN_OR_RETURN(auto out, converter.Convert(*f.frame));
    EXPECT_EQ(out.path, ConvertPath::kPassThrough);
    EXPECT_EQ(out.view.matrix, ColorMatrix::kBt709);
    EXPECT_EQ(out.view.EffectiveRange(), ColorRange::kFull);
    return OkStatus();
  });
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();

  auto plain = MakeMedia("unsignalled.mkv", TestSource(),
                         {"-frames:v", "1", "-c:v", "libx264", "-preset", "ultrafast"});
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  run = WithFirstFrame(*plain, [&](DecodedFrame& f) -> Status {
    EXPECT_FALSE(f.color.matrix_signalled);
    EXPECT_EQ(f.color.matrix, ColorMatrix::kBt601);  // 320x240: SD
    EXPECT_EQ(f.color.range, ColorRange::kLimited);
    return OkStatus();
  });
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
}

// A decoder copies colour tags from the bitstream unchecked, so a frame may carry values no
// enumerator names (the fuzzer's H.264 stream said matrix 65). They read as unsignalled and
// limited range, and reading them is not undefined behaviour (the asan stage's UBSan checks).
TEST(FrameConvert, ColourTagsOutsideTheirEnumsReadAsUnsignalled) {
  AVFrame* frame = av_frame_alloc();
  ASSERT_NE(frame, nullptr);
  frame->width = 1920;
  frame->height = 1080;
  frame->format = AV_PIX_FMT_YUV420P;
  const int matrix_bits = 65;
  const int range_bits = 7;
  std::memcpy(&frame->colorspace, &matrix_bits, sizeof matrix_bits);
  std::memcpy(&frame->color_range, &range_bits, sizeof range_bits);
  const auto color = ColorOf(*frame);
  EXPECT_FALSE(color.matrix_signalled);
  EXPECT_EQ(color.matrix, ColorMatrix::kBt601);  // libswscale's reading of an unsignalled matrix
  EXPECT_EQ(color.range, ColorRange::kLimited);
  av_frame_free(&frame);
}

// The untagged-matrix policies: BT.601 (FFmpeg's), BT.709, and the size-based guess (BT.709
// from 1280 wide or 720 high up). A signalled matrix is never overridden.
TEST(FrameConvert, UntaggedMatrixPolicies) {
  AVFrame* frame = av_frame_alloc();
  ASSERT_NE(frame, nullptr);
  frame->format = AV_PIX_FMT_YUV420P;
  frame->colorspace = AVCOL_SPC_UNSPECIFIED;
  const struct {
    int width, height;
    conveyor::media::UntaggedMatrix policy;
    ColorMatrix want;
  } cases[] = {
      {1920, 1080, conveyor::media::UntaggedMatrix::kBt601, ColorMatrix::kBt601},
      {640, 480, conveyor::media::UntaggedMatrix::kBt709, ColorMatrix::kBt709},
      {1920, 1080, conveyor::media::UntaggedMatrix::kBySize, ColorMatrix::kBt709},
      {1280, 480, conveyor::media::UntaggedMatrix::kBySize, ColorMatrix::kBt709},
      {960, 720, conveyor::media::UntaggedMatrix::kBySize, ColorMatrix::kBt709},
      {1278, 718, conveyor::media::UntaggedMatrix::kBySize, ColorMatrix::kBt601},
  };
  for (const auto& c : cases) {
    frame->width = c.width;
    frame->height = c.height;
    const auto color = ColorOf(*frame, c.policy);
    EXPECT_FALSE(color.matrix_signalled);
    EXPECT_EQ(color.matrix, c.want) << c.width << "x" << c.height << " "
                                    << conveyor::media::UntaggedMatrixName(c.policy);
  }
  frame->colorspace = AVCOL_SPC_BT470BG;
  frame->width = 1920;
  frame->height = 1080;
  EXPECT_EQ(ColorOf(*frame, conveyor::media::UntaggedMatrix::kBySize).matrix, ColorMatrix::kBt601);
  EXPECT_EQ(conveyor::media::ParseUntaggedMatrix("by-size"), conveyor::media::UntaggedMatrix::kBySize);
  EXPECT_EQ(conveyor::media::ParseUntaggedMatrix("BT601"), std::nullopt);
  av_frame_free(&frame);
}

// Gray has no chroma: it converts to yuv420p with neutral chroma.
TEST(FrameConvert, GrayGetsNeutralChroma) {
  auto path = MakeMedia("gray.mkv", TestSource(), {"-frames:v", "1", "-c:v", "ffv1", "-pix_fmt", "gray"});
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  FrameConverter converter;
  auto run = WithFirstFrame(*path, [&](DecodedFrame& f) -> Status {
    ASSIGN_OR_RETURN(auto out, converter.Convert(*f.frame));
    EXPECT_EQ(out.view.format, PixelFormat::kYuv420p);
    for (int c = 1; c < 3; ++c) {
      for (int y = 0; y < 120; ++y) {
        for (int x = 0; x < 160; ++x) {
          const uint8_t v = out.view.plane[c][static_cast<ptrdiff_t>(y) * out.view.stride[c] + x];
          if (v != 128)
            return conveyor::Internal("chroma " + std::to_string(v) + " in plane " + std::to_string(c));
        }
      }
    }
    return OkStatus();
  });
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
}

}  // namespace
