// An outside check of any JPEG the encoder writes, free of FFmpeg so that it runs on the
// GPU host: libjpeg-turbo decodes the file, and each plane is compared with the source's
// JFIF YCbCr computed here in double precision from the standard's coefficients (ITU-T
// T.871; BT.601, BT.709 and BT.2020 for YUV sources), not with the encoder's fixed-point
// conversion. The bar is libjpeg-turbo itself: the same reference planes, compressed by
// libjpeg-turbo at the same quality and subsampling and decoded the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "encode_params.h"
#include "frame.h"
#include "status.h"

namespace conveyor::testing {

// Mean squared error of each plane (Y, Cb, Cr) of a decoded file against the reference,
// and its PSNR in dB (99 where the planes are equal).
struct PlaneErrors {
  double mse[3] = {0, 0, 0};
  double psnr[3] = {0, 0, 0};
  std::string ToString() const;
};

// The source's JFIF YCbCr at the output's subsampling, rounded to 8 bits: chroma of
// subsampled YUV sources is repeated to full resolution, every pixel converted, and
// chroma box-filtered over the pixels each output sample covers, edges repeated. Planes
// are stored at TurboJPEG's plane sizes (tjPlaneWidth/Height: luma padded to the chroma
// factor, edges repeated); plane_w x plane_h is the part the picture covers.
struct ReferencePlanes {
  int width = 0;
  int height = 0;
  Subsampling subsampling = Subsampling::k420;
  std::vector<uint8_t> plane[3];
  int stride[3] = {0, 0, 0};
  int rows[3] = {0, 0, 0};
  int plane_w[3] = {0, 0, 0};
  int plane_h[3] = {0, 0, 0};
};
ReferencePlanes MakeReferencePlanes(const FrameView& frame, Subsampling s);

// Decodes `jpeg` with libjpeg-turbo to YCbCr planes (no upsampling, no colour
// conversion) and measures them against `ref`. A decoder error or warning, or a header
// whose size or subsampling is not the reference's, is an error.
StatusOr<PlaneErrors> MeasureWithLibjpegTurbo(const std::vector<uint8_t>& jpeg, const ReferencePlanes& ref);

// The bar: `ref` compressed by libjpeg-turbo from its planes at `quality`, measured the
// same way.
StatusOr<PlaneErrors> LibjpegTurboErrors(const ReferencePlanes& ref, int quality);

// OK when `jpeg`, the encoder's output for `frame` at `params`, decodes with
// libjpeg-turbo and each plane's error is within what libjpeg-turbo makes of the same
// reference: mse <= (1.1 + 1 / sqrt(blocks)) * libjpeg's + 0.25 + 4 / samples. That is a
// tenth more error where a plane has many blocks, more where a few blocks' quantiser
// decisions decide it; room for rounding the source's conversion once more than the
// reference does; and for four samples off by one in the smallest planes. The message
// names both errors.
Status CheckAgainstLibjpegTurbo(const FrameView& frame, const EncodeParams& params,
                                const std::vector<uint8_t>& jpeg);

}  // namespace conveyor::testing
