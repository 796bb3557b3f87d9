// The host side of hardware decoding, testable without a GPU: get_format's offer and
// FFmpeg's refusal, which decoders take which hwaccel, the device that cannot open, and the
// host transfer path's conversion: a P010 surface (as av_hwframe_transfer_data delivers a
// 10-bit hardware frame) must give the same 8-bit samples as the same picture decoded on
// the CPU (yuv420p10) through libswscale. The GPU host checks the hardware decoders
// themselves (tests/gpu/h200_bundle/decode_identity.sh).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "frame_convert.h"
#include "hw_decode.h"
#include "media_test_util.h"

extern "C" {
#include <libavcodec/avcodec.h>
}

namespace conveyor::media {
namespace {

using media_test::DecodeFile;
using media_test::DecodeSetup;
using media_test::MakeMedia;
using media_test::TestSource;

TEST(HwDecode, GetFormatOffersTheDeviceAndTakesTheSoftwareFormatAfterARefusal) {
  HwDecodeState state;
  state.hw_format = AV_PIX_FMT_CUDA;
  AVCodecContext ctx{};
  ctx.opaque = &state;
  const AVPixelFormat offered[] = {AV_PIX_FMT_VAAPI, AV_PIX_FMT_CUDA, AV_PIX_FMT_YUV420P, AV_PIX_FMT_NONE};
  EXPECT_EQ(GetFormat(&ctx, offered), AV_PIX_FMT_CUDA);
  EXPECT_TRUE(state.asked);
  EXPECT_TRUE(state.hardware);
  EXPECT_FALSE(state.refused);
  EXPECT_EQ(state.software_format, AV_PIX_FMT_YUV420P);
  // FFmpeg asks again without the device format when its hwaccel failed to start.
  const AVPixelFormat without[] = {AV_PIX_FMT_VAAPI, AV_PIX_FMT_YUV420P, AV_PIX_FMT_NONE};
  EXPECT_EQ(GetFormat(&ctx, without), AV_PIX_FMT_YUV420P);
  EXPECT_TRUE(state.refused);
  EXPECT_FALSE(state.hardware);
  // Refused once, the device is not taken again (a later size change asks again).
  EXPECT_EQ(GetFormat(&ctx, offered), AV_PIX_FMT_YUV420P);
  // A list without the device format from the start is no refusal.
  HwDecodeState fresh;
  fresh.hw_format = AV_PIX_FMT_CUDA;
  ctx.opaque = &fresh;
  const AVPixelFormat ten[] = {AV_PIX_FMT_YUV420P10LE, AV_PIX_FMT_NONE};
  EXPECT_EQ(GetFormat(&ctx, ten), AV_PIX_FMT_YUV420P10LE);
  EXPECT_FALSE(fresh.refused);
  EXPECT_FALSE(fresh.hardware);
}

TEST(HwDecode, DecodersThatTakeTheCudaAndVaapiHwaccels) {
  for (AVCodecID id : {AV_CODEC_ID_H264, AV_CODEC_ID_HEVC, AV_CODEC_ID_VP9}) {
    const AVCodec* c = avcodec_find_decoder(id);
    ASSERT_NE(c, nullptr);
    EXPECT_TRUE(DecoderTakes(c, AV_HWDEVICE_TYPE_CUDA)) << c->name;
    EXPECT_TRUE(DecoderTakes(c, AV_HWDEVICE_TYPE_VAAPI)) << c->name;
  }
  // MPEG-2 and MJPEG decode on the CPU though FFmpeg has hwaccels for them: their IDCT is
  // not exact, and the engines' pictures differ from the CPU decoder's.
  for (AVCodecID id : {AV_CODEC_ID_MPEG2VIDEO, AV_CODEC_ID_MJPEG}) {
    const AVCodec* c = avcodec_find_decoder(id);
    ASSERT_NE(c, nullptr);
    std::string why;
    EXPECT_FALSE(DecoderTakes(c, AV_HWDEVICE_TYPE_CUDA, &why)) << c->name;
    EXPECT_NE(why.find("IDCT is not exact"), std::string::npos) << why;
  }
  // ProRes has no hwaccel; nor has AV1 through libdav1d, Debian's first choice for it.
  const AVCodec* prores = avcodec_find_decoder(AV_CODEC_ID_PRORES);
  ASSERT_NE(prores, nullptr);
  std::string why;
  EXPECT_FALSE(DecoderTakes(prores, AV_HWDEVICE_TYPE_CUDA, &why));
  EXPECT_EQ(why, "FFmpeg's prores decoder has no cuda hwaccel");
  const AVCodec* dav1d = avcodec_find_decoder_by_name("libdav1d");
  if (dav1d != nullptr) {
    EXPECT_FALSE(DecoderTakes(dav1d, AV_HWDEVICE_TYPE_CUDA, &why));
    EXPECT_EQ(why, "FFmpeg's libdav1d decoder has no cuda hwaccel");
  }
}

class SurfaceGateBound : public ::testing::TestWithParam<int> {};

TEST_P(SurfaceGateBound, HoldsASessionToItsBound) {
  const int bound = GetParam();
  SurfaceGate gate(bound);
  for (int i = 0; i < bound; ++i) {
    ASSERT_TRUE(gate.WaitForRoom(std::chrono::milliseconds(0))) << i;
    gate.Take();
  }
  EXPECT_EQ(gate.held(), bound);
  EXPECT_FALSE(gate.WaitForRoom(std::chrono::milliseconds(20)));
  // A frame given back on another thread (the worker's upload done) wakes the waiter.
  std::thread giver([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    gate.Give();
  });
  EXPECT_TRUE(gate.WaitForRoom(std::chrono::seconds(10)));
  giver.join();
  EXPECT_EQ(gate.held(), bound - 1);
}

INSTANTIATE_TEST_SUITE_P(HwDecode, SurfaceGateBound,
                         ::testing::Values(kMinHeldDeviceFrames, kDefaultHeldDeviceFrames, kMaxHeldDeviceFrames));

TEST(HwDecode, AMissingRenderNodeIsUnavailable) {
  StatusOr<std::shared_ptr<HwDecodeDevice>> d = HwDecodeDevice::OpenVaapi("", "/nonexistent/renderD999");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kUnavailable) << d.status().ToString();
  EXPECT_NE(d.status().message().find("/nonexistent/renderD999"), std::string::npos) << d.status().ToString();
}

TEST(HwDecode, ModeAndFramesNames) {
  for (DecodeMode m : {DecodeMode::kAuto, DecodeMode::kGpu, DecodeMode::kCpu}) {
    StatusOr<DecodeMode> back = ParseDecodeMode(DecodeModeName(m));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, m);
  }
  EXPECT_FALSE(ParseDecodeMode("nvdec").ok());
  for (DecodedFrames f : {DecodedFrames::kDevice, DecodedFrames::kHost}) {
    StatusOr<DecodedFrames> back = ParseDecodedFrames(DecodedFramesName(f));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, f);
  }
  EXPECT_FALSE(ParseDecodedFrames("pinned").ok());
}

// A yuv420p10le picture repacked as P010 (each sample << 6; Cb and Cr interleaved), with
// rows padded as a decoder's surface pitch would be.
FramePtr AsP010(const AVFrame& src, int pad) {
  FramePtr p(av_frame_alloc());
  p->format = AV_PIX_FMT_P010;
  p->width = src.width;
  p->height = src.height;
  p->color_range = src.color_range;
  p->colorspace = src.colorspace;
  const int cw = (src.width + 1) / 2, ch = (src.height + 1) / 2;
  p->linesize[0] = src.width * 2 + pad;
  p->linesize[1] = cw * 4 + pad;
  p->buf[0] = av_buffer_allocz(static_cast<size_t>(p->linesize[0]) * src.height + 64);
  p->buf[1] = av_buffer_allocz(static_cast<size_t>(p->linesize[1]) * ch + 64);
  p->data[0] = p->buf[0]->data;
  p->data[1] = p->buf[1]->data;
  for (int y = 0; y < src.height; ++y) {
    const auto* in = reinterpret_cast<const uint16_t*>(src.data[0] + y * src.linesize[0]);
    auto* out = reinterpret_cast<uint16_t*>(p->data[0] + y * p->linesize[0]);
    for (int x = 0; x < src.width; ++x) out[x] = static_cast<uint16_t>(in[x] << 6);
  }
  for (int y = 0; y < ch; ++y) {
    const auto* u = reinterpret_cast<const uint16_t*>(src.data[1] + y * src.linesize[1]);
    const auto* v = reinterpret_cast<const uint16_t*>(src.data[2] + y * src.linesize[2]);
    auto* out = reinterpret_cast<uint16_t*>(p->data[1] + y * p->linesize[1]);
    for (int x = 0; x < cw; ++x) {
      out[2 * x] = static_cast<uint16_t>(u[x] << 6);
      out[2 * x + 1] = static_cast<uint16_t>(v[x] << 6);
    }
  }
  return p;
}

// Every plane of an 8-bit yuv420p view against an nv12 view of the same size.
void ExpectSameSamples(const FrameView& planar, const FrameView& nv12, const std::string& what) {
  const int cw = (planar.width + 1) / 2, ch = (planar.height + 1) / 2;
  int differing = 0;
  for (int y = 0; y < planar.height; ++y) {
    differing += std::memcmp(planar.plane[0] + y * planar.stride[0], nv12.plane[0] + y * nv12.stride[0],
                             planar.width) != 0;
  }
  for (int y = 0; y < ch; ++y) {
    for (int x = 0; x < cw; ++x) {
      const uint8_t* uv = nv12.plane[1] + y * nv12.stride[1] + 2 * x;
      differing += planar.plane[1][y * planar.stride[1] + x] != uv[0];
      differing += planar.plane[2][y * planar.stride[2] + x] != uv[1];
    }
  }
  EXPECT_EQ(differing, 0) << what << ": rows or chroma samples that differ";
}

class P010TransferTest : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(P010TransferTest, NarrowsAsTheCpuDecodersPictureIsNarrowed) {
  const auto [width, height, full] = GetParam();
  const std::string name = "ten_" + std::to_string(width) + "x" + std::to_string(height) + (full ? "_full" : "") + ".mkv";
  // Noise, so that every 10-bit value and dither position comes up.
  StatusOr<std::string> path = MakeMedia(name, TestSource(width, height) + ",noise=alls=30:allf=t",
                                         {"-frames:v", "3", "-c:v", "ffv1", "-pix_fmt", "yuv420p10le", "-color_range",
                                          full ? "pc" : "tv"});
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  int frames = 0;
  DecodeSetup setup;
  setup.options.video_codecs = {};  // FFV1: a lossless 10-bit source
  setup.on_frame = [&](ContainerDecoder&, DecodedFrame& f) -> Status {
    EXPECT_EQ(f.format, AV_PIX_FMT_YUV420P10LE);
    FrameConverter cpu_path, transferred;
    ASSIGN_OR_RETURN(ConvertedFrame planar, cpu_path.Convert(*f.frame));
    FramePtr p010 = AsP010(*f.frame, 96);
    std::vector<uint8_t> nv12(PackedFrameSize(PixelFormat::kNv12, width, height));
    ASSIGN_OR_RETURN(PixelFormat target, EncoderFormatFor(AV_PIX_FMT_P010));
    EXPECT_EQ(target, PixelFormat::kNv12);
    ASSIGN_OR_RETURN(ConvertedFrame narrowed, transferred.Convert(*p010, nv12.data(), nv12.size()));
    EXPECT_EQ(planar.view.format, PixelFormat::kYuv420p);
    EXPECT_EQ(narrowed.view.format, PixelFormat::kNv12);
    EXPECT_EQ(narrowed.view.range, planar.view.range);
    EXPECT_EQ(narrowed.view.range, full ? ColorRange::kFull : ColorRange::kLimited);
    ExpectSameSamples(planar.view, narrowed.view, name + " frame " + std::to_string(frames));
    ++frames;
    return OkStatus();
  };
  const media_test::DecodeRun run = DecodeFile(*path, setup);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_EQ(frames, 3);
}

INSTANTIATE_TEST_SUITE_P(Sizes, P010TransferTest,
                         ::testing::Values(std::make_tuple(320, 240, false), std::make_tuple(322, 242, true),
                                           std::make_tuple(33, 17, false), std::make_tuple(1920, 1080, false)));

// A picture's samples, hashed (FNV-1a over every row of the three yuv420p planes).
uint64_t PictureHash(const AVFrame& f) {
  uint64_t h = 1469598103934665603ull;
  for (int p = 0; p < 3; ++p) {
    const int w = p == 0 ? f.width : (f.width + 1) / 2, rows = p == 0 ? f.height : (f.height + 1) / 2;
    for (int y = 0; y < rows; ++y) {
      for (int x = 0; x < w; ++x) h = (h ^ f.data[p][y * f.linesize[p] + x]) * 1099511628211ull;
    }
  }
  return h;
}

// The move to a software decoder at a keyframe (what the daemon does when the engines are
// the bottleneck) drains the old decoder first, so no frame is lost or changed: the same
// path from a software decoder to a fresh one gives the frames of a decode without it.
TEST(HwDecode, MovingToSoftwareAtAKeyframeLosesNoFrame) {
  StatusOr<std::string> path = MakeMedia("gop6.mkv", TestSource(320, 240) + ",noise=alls=8:allf=t",
                                         {"-frames:v", "40", "-c:v", "libx264", "-g", "6", "-keyint_min", "6",
                                          "-sc_threshold", "0", "-bf", "2", "-pix_fmt", "yuv420p"});
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  std::vector<std::pair<int64_t, uint64_t>> plain, moved;
  DecodeSetup setup;
  setup.on_frame = [&](ContainerDecoder&, DecodedFrame& f) -> Status {
    plain.emplace_back(f.pts, PictureHash(*f.frame));
    return OkStatus();
  };
  const media_test::DecodeRun first = DecodeFile(*path, setup);
  ASSERT_TRUE(first.status.ok()) << first.status.ToString();
  std::string note;
  setup.on_frame = [&](ContainerDecoder& d, DecodedFrame& f) -> Status {
    moved.emplace_back(f.pts, PictureHash(*f.frame));
    if (f.number == 3 || f.number == 20) d.MoveToSoftwareAtNextKeyframe("asked by the test");
    note = d.hw_failover();
    return OkStatus();
  };
  const media_test::DecodeRun run = DecodeFile(*path, setup);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_NE(note.find("decoding moved to the CPU at video packet"), std::string::npos) << note;
  EXPECT_NE(note.find("asked by the test"), std::string::npos) << note;
  ASSERT_EQ(plain.size(), 40u);
  EXPECT_EQ(moved, plain) << "the frames around the move differ from a decode without it";
}

}  // namespace
}  // namespace conveyor::media
