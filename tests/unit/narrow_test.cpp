// The narrow stage against libswscale, the reference it has to equal: a picture given to
// NarrowP010ToNv12 as P010 (padded and odd pitches, noise in the padding) and to
// FrameConverter as yuv420p10le (which runs libswscale with the daemon's own options)
// must come out with the same 8-bit samples, luma to luma and each Cb,Cr pair to the U and
// V planes, in both ranges. Random pictures at small, odd and HD sizes, and pictures that
// hold every 10-bit value at every position of the 8x8 dither pattern in every plane.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ffmpeg_handles.h"
#include "frame.h"
#include "frame_convert.h"
#include "narrow_cpu.h"
#include "stage_narrow.h"

extern "C" {
#include <libavutil/frame.h>
#include <libavutil/pixfmt.h>
}

namespace conveyor {
namespace {

using media::ConvertedFrame;
using media::FrameConverter;

constexpr uint8_t kCanary = 0xCD;
constexpr size_t kGuardBytes = 64;

// A 10-bit 4:2:0 picture: the luma plane and the two chroma planes, values 0..1023.
struct TenBitPicture {
  int width = 0, height = 0;
  int chroma_width = 0, chroma_height = 0;
  std::vector<uint16_t> plane[3];

  TenBitPicture(int w, int h) : width(w), height(h), chroma_width((w + 1) / 2), chroma_height((h + 1) / 2) {
    plane[0].resize(static_cast<size_t>(w) * h);
    plane[1].resize(static_cast<size_t>(chroma_width) * chroma_height);
    plane[2].resize(plane[1].size());
  }
  int PlaneWidth(int p) const { return p == 0 ? width : chroma_width; }
  int PlaneHeight(int p) const { return p == 0 ? height : chroma_height; }
  uint16_t At(int p, int x, int y) const { return plane[p][static_cast<size_t>(y) * PlaneWidth(p) + x]; }
};

TenBitPicture RandomPicture(int w, int h, uint32_t seed) {
  TenBitPicture pic(w, h);
  std::mt19937 rng(seed);
  for (auto& pl : pic.plane) {
    for (auto& v : pl) v = static_cast<uint16_t>(rng() & 1023);
  }
  return pic;
}

// Each plane's sample at (x, y) is (x / 8 + (plane width / 8) * (y / 8) + a plane's
// offset) mod 1024: across the 8x8 blocks every value, and so every value at every
// position of the dither pattern, once a plane of 1024 x 64 samples (the chroma of a
// 2048 x 128 picture), four times in its luma.
TenBitPicture EveryValueAtEveryDitherPosition() {
  TenBitPicture pic(2048, 128);
  for (int p = 0; p < 3; ++p) {
    const int w = pic.PlaneWidth(p);
    for (int y = 0; y < pic.PlaneHeight(p); ++y) {
      for (int x = 0; x < w; ++x) {
        const int value = (x / 8 + (w / 8) * (y / 8) + 389 * p) & 1023;
        pic.plane[p][static_cast<size_t>(y) * w + x] = static_cast<uint16_t>(value);
      }
    }
  }
  return pic;
}

// libswscale's 8-bit picture of `pic`, through FrameConverter as the daemon narrows a
// CPU decoder's yuv420p10le frame.
StatusOr<ConvertedFrame> ConvertWithLibswscale(const TenBitPicture& pic, bool full_range, FrameConverter& converter,
                                               media::FramePtr& frame) {
  frame.reset(av_frame_alloc());
  if (!frame) return ResourceExhausted("av_frame_alloc");
  frame->format = AV_PIX_FMT_YUV420P10LE;
  frame->width = pic.width;
  frame->height = pic.height;
  frame->color_range = full_range ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG;
  if (av_frame_get_buffer(frame.get(), 0) < 0) return ResourceExhausted("av_frame_get_buffer");
  for (int p = 0; p < 3; ++p) {
    for (int y = 0; y < pic.PlaneHeight(p); ++y) {
      std::memcpy(frame->data[p] + static_cast<size_t>(y) * frame->linesize[p], &pic.plane[p][y * pic.PlaneWidth(p)],
                  2 * static_cast<size_t>(pic.PlaneWidth(p)));
    }
  }
  ASSIGN_OR_RETURN(ConvertedFrame out, converter.Convert(*frame));
  if (out.view.format != PixelFormat::kYuv420p) return Internal("libswscale's picture is not yuv420p");
  return out;
}

// `pic` as P010: rows `pad_y` and `pad_uv` bytes wider than the samples (odd pads make odd
// pitches), the padding filled with noise, `low_bits` (0..63) in every sample's six low
// bits.
struct P010Picture {
  std::vector<uint8_t> y, uv;
  int y_stride = 0, uv_stride = 0;
};

P010Picture ToP010(const TenBitPicture& pic, int pad_y, int pad_uv, uint16_t low_bits = 0) {
  P010Picture out;
  out.y_stride = 2 * pic.width + pad_y;
  out.uv_stride = 4 * pic.chroma_width + pad_uv;
  out.y.assign(static_cast<size_t>(out.y_stride) * pic.height, 0xA5);
  out.uv.assign(static_cast<size_t>(out.uv_stride) * pic.chroma_height, 0x5A);
  auto put = [low_bits](uint8_t* at, uint16_t v) {
    const uint16_t word = static_cast<uint16_t>(v << 6 | low_bits);
    at[0] = static_cast<uint8_t>(word & 0xFF);
    at[1] = static_cast<uint8_t>(word >> 8);
  };
  for (int r = 0; r < pic.height; ++r) {
    for (int x = 0; x < pic.width; ++x) put(&out.y[static_cast<size_t>(r) * out.y_stride + 2 * x], pic.At(0, x, r));
  }
  for (int r = 0; r < pic.chroma_height; ++r) {
    for (int k = 0; k < pic.chroma_width; ++k) {
      uint8_t* pair = &out.uv[static_cast<size_t>(r) * out.uv_stride + 4 * k];
      put(pair, pic.At(1, k, r));
      put(pair + 2, pic.At(2, k, r));
    }
  }
  return out;
}

// NarrowP010ToNv12's bytes, with a guard after them that must stay untouched.
std::vector<uint8_t> Narrow(const P010Picture& src, int w, int h, bool full_range) {
  const NarrowPlan plan = MakeNarrowPlan(w, h, full_range);
  std::vector<uint8_t> dst(plan.dst_size + kGuardBytes, kCanary);
  NarrowP010ToNv12(src.y.data(), src.y_stride, src.uv.data(), src.uv_stride, w, h, full_range, dst.data());
  for (size_t i = plan.dst_size; i < dst.size(); ++i) {
    EXPECT_EQ(dst[i], kCanary) << "NarrowP010ToNv12 wrote " << i - plan.dst_size << " bytes past the frame";
  }
  dst.resize(plan.dst_size);
  return dst;
}

// The narrowed NV12 bytes against libswscale's planes: luma, then each pair's Cb against
// U and Cr against V. Names the first sample that differs.
::testing::AssertionResult SameAsLibswscale(const std::vector<uint8_t>& nv12, const TenBitPicture& pic,
                                            const FrameView& ref) {
  const NarrowPlan plan = MakeNarrowPlan(pic.width, pic.height, false);
  for (int p = 0; p < 3; ++p) {
    for (int y = 0; y < pic.PlaneHeight(p); ++y) {
      for (int x = 0; x < pic.PlaneWidth(p); ++x) {
        const uint8_t want = ref.plane[p][static_cast<size_t>(y) * ref.stride[p] + x];
        const uint8_t got = p == 0 ? nv12[static_cast<size_t>(y) * pic.width + x]
                                   : nv12[plan.chroma_offset + static_cast<size_t>(y) * plan.chroma_row_bytes +
                                          2 * x + (p - 1)];
        if (got != want) {
          return ::testing::AssertionFailure()
                 << "plane " << "YUV"[p] << " sample (" << x << ", " << y << ") of value " << pic.At(p, x, y)
                 << ": narrowed to " << int{got} << ", libswscale gives " << int{want};
        }
      }
    }
  }
  return ::testing::AssertionSuccess();
}

// Narrows `pic` both ways in both ranges, with the P010 rows padded as given.
void ExpectSameAsLibswscale(const TenBitPicture& pic, int pad_y, int pad_uv, const std::string& label) {
  for (const bool full : {false, true}) {
    const std::string what = std::to_string(pic.width) + "x" + std::to_string(pic.height) + " " + label +
                             (full ? " full range" : " limited range") + ", pads " + std::to_string(pad_y) + "/" +
                             std::to_string(pad_uv);
    FrameConverter converter;
    media::FramePtr frame;
    auto ref = ConvertWithLibswscale(pic, full, converter, frame);
    ASSERT_TRUE(ref.ok()) << what << ": " << ref.status().ToString();
    const std::vector<uint8_t> nv12 = Narrow(ToP010(pic, pad_y, pad_uv), pic.width, pic.height, full);
    EXPECT_TRUE(SameAsLibswscale(nv12, pic, ref->view)) << what;
  }
}

const int kSizes[][2] = {{1, 1}, {2, 2}, {17, 9}, {33, 47}, {130, 70}, {1920, 1080}};

TEST(Narrow, EqualsLibswscaleOnRandomPictures) {
  uint32_t seed = 1;
  for (const auto& s : kSizes) {
    const TenBitPicture pic = RandomPicture(s[0], s[1], seed++);
    ExpectSameAsLibswscale(pic, 0, 0, "random");
    ExpectSameAsLibswscale(pic, 7, 13, "random");     // odd pitches
    ExpectSameAsLibswscale(pic, 64, 128, "random");  // aligned ones, as decoders pad
  }
}

TEST(Narrow, EqualsLibswscaleForEveryValueAtEveryDitherPosition) {
  const TenBitPicture pic = EveryValueAtEveryDitherPosition();
  // The picture does cover every (value, x mod 8, y mod 8) in each plane.
  for (int p = 0; p < 3; ++p) {
    std::vector<bool> seen(1024 * 64, false);
    for (int y = 0; y < pic.PlaneHeight(p); ++y) {
      for (int x = 0; x < pic.PlaneWidth(p); ++x) seen[pic.At(p, x, y) * 64 + (y & 7) * 8 + (x & 7)] = true;
    }
    size_t covered = 0;
    for (const bool b : seen) covered += b ? 1 : 0;
    ASSERT_EQ(covered, seen.size()) << "plane " << p;
  }
  ExpectSameAsLibswscale(pic, 0, 0, "every value");
  ExpectSameAsLibswscale(pic, 3, 6, "every value");
}

TEST(Narrow, IgnoresTheSixLowBitsOfP010) {
  const TenBitPicture pic = RandomPicture(33, 47, 99);
  for (const bool full : {false, true}) {
    const std::vector<uint8_t> clean = Narrow(ToP010(pic, 5, 5, 0), pic.width, pic.height, full);
    EXPECT_EQ(Narrow(ToP010(pic, 5, 5, 63), pic.width, pic.height, full), clean);
    EXPECT_EQ(Narrow(ToP010(pic, 5, 5, 21), pic.width, pic.height, full), clean);
  }
}

TEST(Narrow, EndsOfTheRangeMapToTheEndsOfEightBits) {
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 8; ++x) {
      for (const bool chroma : {false, true}) {
        for (const bool full : {false, true}) {
          EXPECT_EQ(NarrowSample(0, x, y, chroma, full), 0);
          EXPECT_EQ(NarrowSample(1023, x, y, chroma, full), 255);
        }
      }
    }
  }
}

TEST(Narrow, PlanIsThePackedNv12Layout) {
  for (const auto& s : {std::make_pair(1, 1), std::make_pair(17, 9), std::make_pair(33, 47),
                        std::make_pair(1920, 1080), std::make_pair(1921, 1081)}) {
    const NarrowPlan plan = MakeNarrowPlan(s.first, s.second, true);
    const PlaneGeometry g = PackedPlaneGeometry(PixelFormat::kNv12, s.first, s.second);
    EXPECT_EQ(plan.chroma_offset, g.offset[1]);
    EXPECT_EQ(plan.chroma_row_bytes, g.row_bytes[1]);
    EXPECT_EQ(plan.chroma_rows, g.rows[1]);
    EXPECT_EQ(plan.dst_size, PackedFrameSize(PixelFormat::kNv12, s.first, s.second));
  }
}

}  // namespace
}  // namespace conveyor
