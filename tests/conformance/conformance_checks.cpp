#include "conformance_checks.h"

#include <turbojpeg.h>

extern "C" {
#include <libavutil/pixfmt.h>
}

namespace conformance {

using conveyor::Subsampling;

conveyor::StatusOr<std::vector<uint8_t>> EncodePacked(conveyor::CpuJpegEncoder& enc,
                                                      const std::vector<uint8_t>& data,
                                                      int width, int height,
                                                      conveyor::PixelFormat format,
                                                      const conveyor::EncodeParams& params,
                                                      conveyor::ColorMatrix matrix,
                                                      conveyor::ColorRange range) {
  ASSIGN_OR_RETURN(conveyor::FrameView view,
                   conveyor::MakePackedFrameView(data.data(), data.size(), width, height, format,
                                                 matrix, range));
  return enc.Encode(view, params);
}

namespace {

int FfmpegPixFmtOf(Subsampling s) {
  switch (s) {
    case Subsampling::k420: return AV_PIX_FMT_YUVJ420P;
    case Subsampling::k422: return AV_PIX_FMT_YUVJ422P;
    case Subsampling::k444: return AV_PIX_FMT_YUVJ444P;
  }
  return -1;
}

int LumaSamplingOf(Subsampling s) {
  switch (s) {
    case Subsampling::k420: return 0x22;
    case Subsampling::k422: return 0x21;
    case Subsampling::k444: return 0x11;
  }
  return 0;
}

}  // namespace

::testing::AssertionResult DecodeWithBoth(const std::vector<uint8_t>& jpeg, int width,
                                          int height, Subsampling s, BothDecodes* out,
                                          bool compare_planes) {
  const std::string geometry = std::to_string(width) + "x" + std::to_string(height) + " " +
                               conveyor::SubsamplingName(s);

  // Marker structure.
  out->layout = ParseStream(jpeg);
  if (!out->layout.ok) {
    return ::testing::AssertionFailure() << geometry << ": stream structure: " << out->layout.error;
  }
  if (!out->layout.eoi_at_end) {
    return ::testing::AssertionFailure() << geometry << ": EOI is not the last marker";
  }
  if (out->layout.sof_width != width || out->layout.sof_height != height) {
    return ::testing::AssertionFailure() << geometry << ": SOF0 says " << out->layout.sof_width
                                         << "x" << out->layout.sof_height;
  }
  if (out->layout.sof_sampling[0] != LumaSamplingOf(s) || out->layout.sof_sampling[1] != 0x11 ||
      out->layout.sof_sampling[2] != 0x11) {
    return ::testing::AssertionFailure()
           << geometry << ": SOF0 sampling factors " << std::hex << out->layout.sof_sampling[0]
           << "/" << out->layout.sof_sampling[1] << "/" << out->layout.sof_sampling[2];
  }

  // libjpeg-turbo.
  auto hdr = TurboReadHeader(jpeg);
  if (!hdr.ok()) {
    return ::testing::AssertionFailure() << geometry << ": libjpeg-turbo header: "
                                         << hdr.status().message();
  }
  if (hdr->width != width || hdr->height != height) {
    return ::testing::AssertionFailure() << geometry << ": libjpeg-turbo reports " << hdr->width
                                         << "x" << hdr->height;
  }
  if (hdr->subsamp != TurboSubsampOf(s)) {
    return ::testing::AssertionFailure() << geometry << ": libjpeg-turbo reports TJSAMP "
                                         << hdr->subsamp;
  }
  if (hdr->colorspace != TJCS_YCbCr) {
    return ::testing::AssertionFailure() << geometry << ": libjpeg-turbo reports TJCS "
                                         << hdr->colorspace;
  }
  auto rgb = TurboDecodeRgb(jpeg);
  if (!rgb.ok()) {
    return ::testing::AssertionFailure() << geometry << ": libjpeg-turbo decode: "
                                         << rgb.status().message();
  }
  if (rgb->width != width || rgb->height != height) {
    return ::testing::AssertionFailure() << geometry << ": libjpeg-turbo decoded " << rgb->width
                                         << "x" << rgb->height;
  }
  out->turbo_rgb = std::move(rgb).value();

  // FFmpeg.
  auto ff = FfmpegDecode(jpeg);
  if (!ff.ok()) {
    return ::testing::AssertionFailure() << geometry << ": FFmpeg mjpeg decode: "
                                         << ff.status().message();
  }
  if (ff->yuv.width != width || ff->yuv.height != height) {
    return ::testing::AssertionFailure() << geometry << ": FFmpeg decoded " << ff->yuv.width
                                         << "x" << ff->yuv.height;
  }
  if (ff->pix_fmt != FfmpegPixFmtOf(s)) {
    return ::testing::AssertionFailure() << geometry << ": FFmpeg decoded to " << ff->pix_fmt_name;
  }
  out->ffmpeg = std::move(ff).value();

  if (compare_planes) {
    auto yuv = TurboDecodeYuv(jpeg);
    if (!yuv.ok()) {
      return ::testing::AssertionFailure() << geometry << ": libjpeg-turbo YUV decode: "
                                           << yuv.status().message();
    }
    // libjpeg-turbo pads the luma plane to whole chroma samples (18x10 for a 17x9 4:2:0
    // picture); FFmpeg does not. Compare the picture's own samples.
    std::vector<uint8_t> a, b;
    out->turbo_yuv.width = width;
    out->turbo_yuv.height = height;
    for (int c = 0; c < 3; ++c) {
      const int fw = out->ffmpeg.yuv.plane_w[c], fh = out->ffmpeg.yuv.plane_h[c];
      const int tw = yuv->plane_w[c], th = yuv->plane_h[c];
      const int want_w = c == 0 ? width : (tw == fw ? fw : -1);
      const int want_h = c == 0 ? height : (th == fh ? fh : -1);
      if (fw != want_w || fh != want_h || tw < fw || th < fh || tw > fw + 1 || th > fh + 1) {
        return ::testing::AssertionFailure()
               << geometry << ": plane " << c << " is " << tw << "x" << th
               << " for libjpeg-turbo but " << fw << "x" << fh << " for FFmpeg";
      }
      out->turbo_yuv.plane[c] = CropPlane(*yuv, c, fw, fh);
      out->turbo_yuv.plane_w[c] = fw;
      out->turbo_yuv.plane_h[c] = fh;
      a.insert(a.end(), out->turbo_yuv.plane[c].begin(), out->turbo_yuv.plane[c].end());
      b.insert(b.end(), out->ffmpeg.yuv.plane[c].begin(), out->ffmpeg.yuv.plane[c].end());
    }
    out->plane_max_diff = MaxAbsDiff(a, b);
    out->plane_psnr = Psnr(a, b);
  }
  return ::testing::AssertionSuccess();
}

}  // namespace conformance
