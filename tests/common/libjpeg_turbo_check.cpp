#include "libjpeg_turbo_check.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

namespace conveyor::testing {
namespace {

struct TjDeleter {
  void operator()(void* h) const { tjDestroy(h); }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;
struct TjBufferDeleter {
  void operator()(unsigned char* p) const { tjFree(p); }
};

Status TurboError(const char* what, void* h) {
  const bool warning = tjGetErrorCode(h) == TJERR_WARNING;
  return Internal(std::string("libjpeg-turbo ") + what + (warning ? " warning: " : " error: ") +
                  tjGetErrorStr2(h));
}

int TurboSubsamp(Subsampling s) {
  switch (s) {
    case Subsampling::k420: return TJSAMP_420;
    case Subsampling::k422: return TJSAMP_422;
    case Subsampling::k444: return TJSAMP_444;
  }
  return TJSAMP_420;
}

// Kr and Kb of the source's matrix (BT.601, BT.709, BT.2020).
void MatrixCoefficients(ColorMatrix m, double* kr, double* kb) {
  switch (m) {
    case ColorMatrix::kBt601: *kr = 0.299, *kb = 0.114; return;
    case ColorMatrix::kBt709: *kr = 0.2126, *kb = 0.0722; return;
    case ColorMatrix::kBt2020: *kr = 0.2627, *kb = 0.0593; return;
  }
}

// One pixel of the source as normalised R, G, B (0..1 where in gamut; out-of-gamut YUV
// is kept as it is, as the conversion to JFIF is linear).
struct Rgb {
  double r, g, b;
};

Rgb SourcePixel(const FrameView& f, const FormatLayout& l, int x, int y) {
  if (l.kind == LayoutKind::kPackedRgb) {
    const uint8_t* px = f.plane[0] + static_cast<size_t>(y) * f.stride[0] + x * l.bytes_per_pixel;
    return {px[l.r_index] / 255.0, px[l.g_index] / 255.0, px[l.b_index] / 255.0};
  }
  const int cx = x >> l.chroma_shift_x;
  const size_t crow = static_cast<size_t>(y >> l.chroma_shift_y);
  const int yc = f.plane[0][static_cast<size_t>(y) * f.stride[0] + x];
  int cb, cr;
  if (l.kind == LayoutKind::kSemiPlanarYuv) {
    cb = f.plane[1][crow * f.stride[1] + 2 * cx];
    cr = f.plane[1][crow * f.stride[1] + 2 * cx + 1];
  } else {
    cb = f.plane[1][crow * f.stride[1] + cx];
    cr = f.plane[2][crow * f.stride[2] + cx];
  }
  const bool full = f.EffectiveRange() == ColorRange::kFull;
  const double ey = full ? yc / 255.0 : (yc - 16) / 219.0;
  const double pb = (cb - 128) / (full ? 255.0 : 224.0);
  const double pr = (cr - 128) / (full ? 255.0 : 224.0);
  double kr = 0.299, kb = 0.114;
  MatrixCoefficients(f.matrix, &kr, &kb);
  const double kg = 1 - kr - kb;
  const double r = ey + 2 * (1 - kr) * pr;
  const double b = ey + 2 * (1 - kb) * pb;
  return {r, (ey - kr * r - kb * b) / kg, b};
}

uint8_t RoundToByte(double v) { return static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L)); }

double Psnr(double mse) { return mse <= 0 ? 99.0 : std::min(99.0, 10 * std::log10(255.0 * 255.0 / mse)); }

}  // namespace

std::string PlaneErrors::ToString() const {
  char text[160];
  std::snprintf(text, sizeof(text), "Y %.2f dB (mse %.3f), Cb %.2f dB (mse %.3f), Cr %.2f dB (mse %.3f)",
                psnr[0], mse[0], psnr[1], mse[1], psnr[2], mse[2]);
  return text;
}

ReferencePlanes MakeReferencePlanes(const FrameView& frame, Subsampling s) {
  ReferencePlanes ref;
  ref.width = frame.width;
  ref.height = frame.height;
  ref.subsampling = s;
  const int w = frame.width, h = frame.height;
  const FormatLayout layout = LayoutOf(frame.format);
  // T.871: Y = 0.299 R + 0.587 G + 0.114 B, Cb and Cr centred on 128, full range.
  std::vector<double> ycc[3];
  for (auto& p : ycc) p.resize(static_cast<size_t>(w) * h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const Rgb p = SourcePixel(frame, layout, x, y);
      const size_t i = static_cast<size_t>(y) * w + x;
      ycc[0][i] = 255 * (0.299 * p.r + 0.587 * p.g + 0.114 * p.b);
      ycc[1][i] = 128 + 255 * (-0.168735892 * p.r - 0.331264108 * p.g + 0.5 * p.b);
      ycc[2][i] = 128 + 255 * (0.5 * p.r - 0.418687589 * p.g - 0.081312411 * p.b);
    }
  const int hs = s == Subsampling::k444 ? 1 : 2;
  const int vs = s == Subsampling::k420 ? 2 : 1;
  for (int c = 0; c < 3; ++c) {
    const int fx = c == 0 ? 1 : hs, fy = c == 0 ? 1 : vs;
    const int pw = (w + fx - 1) / fx, ph = (h + fy - 1) / fy;
    ref.plane_w[c] = pw;
    ref.plane_h[c] = ph;
    ref.stride[c] = tjPlaneWidth(c, w, TurboSubsamp(s));
    ref.rows[c] = tjPlaneHeight(c, h, TurboSubsamp(s));
    ref.plane[c].resize(static_cast<size_t>(ref.stride[c]) * ref.rows[c]);
    for (int py = 0; py < ref.rows[c]; ++py)
      for (int px = 0; px < ref.stride[c]; ++px) {
        double sum = 0;
        for (int dy = 0; dy < fy; ++dy)
          for (int dx = 0; dx < fx; ++dx) {
            const int x = std::min(px * fx + dx, w - 1), y = std::min(py * fy + dy, h - 1);
            sum += ycc[c][static_cast<size_t>(y) * w + x];
          }
        ref.plane[c][static_cast<size_t>(py) * ref.stride[c] + px] = RoundToByte(sum / (fx * fy));
      }
  }
  return ref;
}

StatusOr<PlaneErrors> MeasureWithLibjpegTurbo(const std::vector<uint8_t>& jpeg, const ReferencePlanes& ref) {
  TjHandle h(tjInitDecompress());
  if (!h) return Internal(std::string("tjInitDecompress: ") + tjGetErrorStr2(nullptr));
  int w = 0, hgt = 0, subsamp = -1, cs = -1;
  if (tjDecompressHeader3(h.get(), jpeg.data(), jpeg.size(), &w, &hgt, &subsamp, &cs) != 0) {
    return TurboError("tjDecompressHeader3", h.get());
  }
  if (w != ref.width || hgt != ref.height || subsamp != TurboSubsamp(ref.subsampling) || cs != TJCS_YCbCr) {
    return Internal("libjpeg-turbo reads " + std::to_string(w) + "x" + std::to_string(hgt) + " subsampling " +
                    std::to_string(subsamp) + " colour space " + std::to_string(cs) + ", expected " +
                    std::to_string(ref.width) + "x" + std::to_string(ref.height) + " subsampling " +
                    std::to_string(TurboSubsamp(ref.subsampling)) + " (YCbCr)");
  }
  std::vector<uint8_t> decoded[3];
  unsigned char* planes[3];
  int strides[3];
  for (int c = 0; c < 3; ++c) {
    decoded[c].resize(ref.plane[c].size());
    planes[c] = decoded[c].data();
    strides[c] = ref.stride[c];
  }
  if (tjDecompressToYUVPlanes(h.get(), jpeg.data(), jpeg.size(), planes, w, strides, hgt, 0) != 0) {
    return TurboError("tjDecompressToYUVPlanes", h.get());
  }
  PlaneErrors e;
  for (int c = 0; c < 3; ++c) {
    double sum = 0;
    for (int y = 0; y < ref.plane_h[c]; ++y)
      for (int x = 0; x < ref.plane_w[c]; ++x) {
        const size_t i = static_cast<size_t>(y) * ref.stride[c] + x;
        const double d = static_cast<double>(decoded[c][i]) - ref.plane[c][i];
        sum += d * d;
      }
    e.mse[c] = sum / (static_cast<double>(ref.plane_w[c]) * ref.plane_h[c]);
    e.psnr[c] = Psnr(e.mse[c]);
  }
  return e;
}

StatusOr<PlaneErrors> LibjpegTurboErrors(const ReferencePlanes& ref, int quality) {
  TjHandle h(tjInitCompress());
  if (!h) return Internal(std::string("tjInitCompress: ") + tjGetErrorStr2(nullptr));
  const unsigned char* planes[3] = {ref.plane[0].data(), ref.plane[1].data(), ref.plane[2].data()};
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const int rc = tjCompressFromYUVPlanes(h.get(), planes, ref.width, ref.stride, ref.height,
                                         TurboSubsamp(ref.subsampling), &out, &size, quality, 0);
  std::unique_ptr<unsigned char, TjBufferDeleter> owned(out);
  if (rc != 0) return TurboError("tjCompressFromYUVPlanes", h.get());
  return MeasureWithLibjpegTurbo(std::vector<uint8_t>(out, out + size), ref);
}

Status CheckAgainstLibjpegTurbo(const FrameView& frame, const EncodeParams& params,
                                const std::vector<uint8_t>& jpeg) {
  const ReferencePlanes ref = MakeReferencePlanes(frame, params.subsampling);
  auto ours = MeasureWithLibjpegTurbo(jpeg, ref);
  if (!ours.ok()) return ours.status();
  auto theirs = LibjpegTurboErrors(ref, params.quality);
  if (!theirs.ok()) return theirs.status();
  static const char* const kPlane[3] = {"Y", "Cb", "Cr"};
  for (int c = 0; c < 3; ++c) {
    const double samples = static_cast<double>(ref.plane_w[c]) * ref.plane_h[c];
    const double blocks = std::ceil(ref.plane_w[c] / 8.0) * std::ceil(ref.plane_h[c] / 8.0);
    if (ours->mse[c] > (1.1 + 1 / std::sqrt(blocks)) * theirs->mse[c] + 0.25 + 4 / samples) {
      return Internal(std::string(kPlane[c]) + " is worse than libjpeg-turbo's at q" +
                      std::to_string(params.quality) + ": ours " + ours->ToString() + "; libjpeg-turbo " +
                      theirs->ToString());
    }
  }
  return OkStatus();
}

}  // namespace conveyor::testing
