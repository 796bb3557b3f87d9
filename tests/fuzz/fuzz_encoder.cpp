// Fuzz target: the CPU encoder on fuzz-chosen sizes (up to 256x256), pixel formats,
// colour signalling, quality, subsampling, restart interval, band split and row padding.
// Three encodes must give the same bytes: the whole frame on one thread from a tightly
// packed view; a band split on two threads from a view with padded rows; and the
// reference built from the per-sample and per-block definitions (reference_jpeg.h). The
// file must decode with libjpeg-turbo, without warnings, to the frame's size and
// subsampling. Parameters out of range must be refused with INVALID_ARGUMENT.
#include <fuzzer/FuzzedDataProvider.h>
#include <turbojpeg.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu_encoder.h"
#include "encode_plan.h"
#include "frame.h"
#include "reference_jpeg.h"

namespace {

using conveyor::EncodeParams;
using conveyor::PixelFormat;

constexpr int kMaxSide = 256;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

int RestartInterval(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 4)) {
    case 0: return conveyor::kRestartAuto;
    case 1: return 0;
    case 2: return in.ConsumeIntegralInRange(1, 64);
    case 3: return in.ConsumeIntegralInRange(1, conveyor::kMaxRestartInterval);
    default: return in.ConsumeIntegralInRange(-3, conveyor::kMaxRestartInterval + 3);  // maybe invalid
  }
}

// The same frame, rows padded by `pad[p]` bytes per plane, padding filled with junk that
// must never show in the output.
struct PaddedFrame {
  std::vector<uint8_t> bytes;
  conveyor::FrameView view;
};

PaddedFrame Pad(const conveyor::FrameView& tight, const int pad[3]) {
  const conveyor::PlaneGeometry g = conveyor::PackedPlaneGeometry(tight.format, tight.width, tight.height);
  PaddedFrame out;
  out.view = tight;
  size_t offset[3] = {0, 0, 0}, total = 0;
  for (int p = 0; p < 3; ++p) {
    if (tight.plane[p] == nullptr) continue;
    offset[p] = total;
    total += static_cast<size_t>(g.row_bytes[p] + pad[p]) * g.rows[p];
  }
  out.bytes.assign(total, 0xA5);
  for (int p = 0; p < 3; ++p) {
    if (tight.plane[p] == nullptr) continue;
    out.view.stride[p] = g.row_bytes[p] + pad[p];
    for (int y = 0; y < g.rows[p]; ++y) {
      std::copy(tight.plane[p] + static_cast<size_t>(y) * tight.stride[p],
                tight.plane[p] + static_cast<size_t>(y) * tight.stride[p] + g.row_bytes[p],
                out.bytes.begin() + offset[p] + static_cast<size_t>(y) * out.view.stride[p]);
    }
  }
  for (int p = 0; p < 3; ++p) {
    if (tight.plane[p] != nullptr) out.view.plane[p] = out.bytes.data() + offset[p];
  }
  return out;
}

int TurboSubsampling(conveyor::Subsampling s) {
  switch (s) {
    case conveyor::Subsampling::k420: return TJSAMP_420;
    case conveyor::Subsampling::k422: return TJSAMP_422;
    case conveyor::Subsampling::k444: return TJSAMP_444;
  }
  return -1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  // Sides up to 16, 32, ... kMaxSide, equally likely: small frames reach every edge case
  // of the MCU grid at a fraction of the cost, large ones still come up often.
  const int side = kMaxSide >> in.ConsumeIntegralInRange(0, 4);
  const int width = in.ConsumeIntegralInRange(1, side);
  const int height = in.ConsumeIntegralInRange(1, side);
  const auto format = static_cast<PixelFormat>(in.ConsumeIntegralInRange(0, 8));
  const auto matrix = static_cast<conveyor::ColorMatrix>(in.ConsumeIntegralInRange(0, 2));
  const auto range = static_cast<conveyor::ColorRange>(in.ConsumeIntegralInRange(0, 1));
  EncodeParams params;
  params.quality = in.ConsumeIntegralInRange(0, 101);  // 0 and 101 must be refused
  params.subsampling = static_cast<conveyor::Subsampling>(in.ConsumeIntegralInRange(0, 2));
  params.restart_interval = RestartInterval(in);
  const int band_rows = in.ConsumeIntegralInRange(1, height + 16);
  int pad[3];
  for (int& p : pad) p = in.ConsumeIntegralInRange(0, 15);

  // The pixels: the rest of the input, repeated to fill the frame.
  const std::vector<uint8_t> tail = in.ConsumeRemainingBytes<uint8_t>();
  std::vector<uint8_t> pixels(conveyor::PackedFrameSize(format, width, height));
  for (size_t i = 0; i < pixels.size() && !tail.empty(); ++i) pixels[i] = tail[i % tail.size()];
  auto tight = conveyor::MakePackedFrameView(pixels.data(), pixels.size(), width, height, format, matrix, range);
  Check(tight.ok());

  static conveyor::CpuJpegEncoder one_thread(1), two_threads(2);
  auto whole = one_thread.Encode(*tight, params);
  if (!conveyor::ValidateParams(params).ok()) {
    Check(!whole.ok() && whole.status().code() == conveyor::StatusCode::kInvalidArgument);
    return 0;
  }
  Check(whole.ok());

  const PaddedFrame padded = Pad(*tight, pad);
  auto split = two_threads.Encode(padded.view, params, band_rows);
  Check(split.ok() && *split == *whole);

  auto plan = conveyor::MakeEncodePlan(*tight, params, band_rows);
  Check(plan.ok());
  Check(conveyor::fuzz::ReferenceJpeg(*plan, conveyor::SourcePlanesOf(*tight)) == *whole);

  static tjhandle tj = tjInitDecompress();
  int w = 0, h = 0, subsamp = -1, colorspace = -1;
  Check(tjDecompressHeader3(tj, whole->data(), whole->size(), &w, &h, &subsamp, &colorspace) == 0);
  Check(w == width && h == height && subsamp == TurboSubsampling(params.subsampling));
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  Check(tjDecompress2(tj, whole->data(), whole->size(), rgb.data(), w, 0, h, TJPF_RGB, TJFLAG_STOPONWARNING) == 0);
  return 0;
}
