// Shared machinery of the conformance suite: test media rendered by the ffmpeg CLI into a
// per-process temporary directory, two independent decoders (FFmpeg's libavcodec mjpeg and
// libjpeg-turbo's TurboJPEG API), a libjpeg reference encoder and PSNR. The decoders are
// defined in conformance_decoders.cpp, the rest in conformance_util.cpp.
//
// Every C handle is owned by a unique_ptr with a deleter; errors come back as
// conveyor::Status so a failing test prints what the library said.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "encode_params.h"
#include "frame.h"
#include "status.h"

namespace conformance {

// ---------------------------------------------------------------------------------------
// Test media

// The per-process scratch directory (mkdtemp). Created on first use; removed by
// RemoveTempDir(), which the suite's main calls after the tests.
const std::string& TempDir();
void RemoveTempDir();

enum class Content {
  kTestsrc2,       // testsrc2: colour bars, gradients, text; sharp edges, no noise
  kTestsrc2Noise,  // testsrc2 with temporal+uniform noise (alls=20): "camera-like"
  kMandelbrot,     // mandelbrot: fine detail and smooth colour ramps
  kGradients,      // gradients, four fixed colours: smooth, low-frequency
  kSmpteBars,      // smptehdbars: flat saturated colours
};
const char* ContentName(Content c);

// Renders one frame of `content` at exactly width x height as packed rgb24. Results are
// cached per process; the raw file stays in TempDir() so it can be converted further.
conveyor::StatusOr<std::vector<uint8_t>> RenderRgb(Content content, int width, int height);

// Converts the rgb24 rendering of `content` with the ffmpeg CLI through `filter` (a -vf
// graph, e.g. "scale=out_color_matrix=bt709:out_range=tv,format=yuv420p") into raw frames
// of `pix_fmt`, and checks that the result is PackedFrameSize(format) bytes.
conveyor::StatusOr<std::vector<uint8_t>> ConvertRgb(Content content, int width, int height,
                                                    const std::string& filter,
                                                    conveyor::PixelFormat format);

// Runs /usr/bin/ffmpeg with `args` (no shell). On failure the message holds its stderr.
conveyor::Status RunFfmpeg(const std::vector<std::string>& args);

// ---------------------------------------------------------------------------------------
// Decoders

// A decoded picture as packed planes (no row padding). For RGB output plane[0] holds
// width*height*3 bytes; for YCbCr output the three planes at their own resolution.
struct Planes {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> plane[3];
  int plane_w[3] = {0, 0, 0};
  int plane_h[3] = {0, 0, 0};
};

struct TurboHeader {
  int width = 0;
  int height = 0;
  int subsamp = -1;     // TJSAMP_*
  int colorspace = -1;  // TJCS_*
};

// libjpeg-turbo (TurboJPEG API): header, then decode to packed RGB. Any error or warning
// (tjDecompress2 returns -1 for both) is a failure.
conveyor::StatusOr<TurboHeader> TurboReadHeader(const std::vector<uint8_t>& jpeg);
conveyor::StatusOr<Planes> TurboDecodeRgb(const std::vector<uint8_t>& jpeg);
// libjpeg-turbo to raw YCbCr planes at their coded resolution (no upsampling).
conveyor::StatusOr<Planes> TurboDecodeYuv(const std::vector<uint8_t>& jpeg);

struct FfmpegDecoded {
  Planes yuv;          // the decoder's output planes, packed
  int pix_fmt = -1;    // AVPixelFormat of the decoder's output
  std::string pix_fmt_name;
};

// FFmpeg's libavcodec mjpeg decoder through send_packet/receive_frame, with
// err_recognition set to explode; any decoder log line at warning level or above, a
// corrupt-frame flag or decode_error_flags is a failure.
conveyor::StatusOr<FfmpegDecoded> FfmpegDecode(const std::vector<uint8_t>& jpeg);

// ---------------------------------------------------------------------------------------
// Reference encoder

// libjpeg (libjpeg-turbo's libjpeg API) with jpeg_set_quality(q, TRUE), JDCT_ISLOW,
// optimize_coding FALSE, luma sampling factors for `s`, chroma 1x1 and
// cinfo.restart_interval = restart_mcus.
conveyor::StatusOr<std::vector<uint8_t>> LibjpegEncodeRgb(const uint8_t* rgb, int width,
                                                          int height, int quality,
                                                          conveyor::Subsampling s,
                                                          int restart_mcus);

// ---------------------------------------------------------------------------------------
// Measures

// 10*log10(255^2 / MSE) over all `n` bytes (for RGB: all pixels, all channels).
// +infinity when the inputs are identical.
double Psnr(const uint8_t* a, const uint8_t* b, size_t n);
inline double Psnr(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  return a.size() == b.size() ? Psnr(a.data(), b.data(), a.size()) : -1.0;
}
int MaxAbsDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b);

// The top-left w x h samples of plane c (decoders may pad planes to whole MCUs).
std::vector<uint8_t> CropPlane(const Planes& p, int c, int w, int h);

// JFIF luma (T.871: 0.299 R + 0.587 G + 0.114 B, rounded) of packed rgb24.
std::vector<uint8_t> JfifLuma(const std::vector<uint8_t>& rgb);

// The TJSAMP_* value a conformant decoder must report for our subsampling.
int TurboSubsampOf(conveyor::Subsampling s);

// Marker-level view of a baseline JFIF stream: the DRI value (-1 without DRI), the RST
// markers found in the entropy-coded data in order (0..7), and whether the stream ends
// with EOI right after the scan.
struct StreamLayout {
  bool ok = false;
  std::string error;
  int dri = -1;
  int sof_width = 0, sof_height = 0;
  int sof_sampling[3] = {0, 0, 0};  // H<<4|V per component
  std::vector<int> rst;
  bool eoi_at_end = false;
};
StreamLayout ParseStream(const std::vector<uint8_t>& jpeg);

}  // namespace conformance
