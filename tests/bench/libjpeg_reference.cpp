// libjpeg-turbo reference encoder.
#include "libjpeg_reference.h"

#include <cstdio>
#include <memory>

#include <jpeglib.h>
#include <turbojpeg.h>

namespace conveyor::bench {
namespace {

bool IsRgb(PixelFormat f) { return LayoutOf(f).kind == LayoutKind::kPackedRgb; }

int TjSubsamp(Subsampling s) {
  return s == Subsampling::k420 ? TJSAMP_420 : s == Subsampling::k422 ? TJSAMP_422 : TJSAMP_444;
}

bool PlanesMatch(PixelFormat f, Subsampling s) {
  switch (f) {
    case PixelFormat::kYuv420p:
    case PixelFormat::kYuvj420p: return s == Subsampling::k420;
    case PixelFormat::kYuv422p: return s == Subsampling::k422;
    case PixelFormat::kYuv444p: return s == Subsampling::k444;
    default: return false;
  }
}

J_COLOR_SPACE JpegColorSpace(PixelFormat f) {
  switch (f) {
    case PixelFormat::kBgr24: return JCS_EXT_BGR;
    case PixelFormat::kRgba: return JCS_EXT_RGBA;
    case PixelFormat::kBgra: return JCS_EXT_BGRA;
    default: return JCS_EXT_RGB;
  }
}

struct CompressDeleter {
  void operator()(jpeg_compress_struct* c) const { jpeg_destroy_compress(c); }
};
struct TjDeleter {
  void operator()(void* h) const { tjDestroy(h); }
};
struct TjBufferDeleter {
  void operator()(unsigned char* p) const { tjFree(p); }
};

}  // namespace

std::string ReferenceUnsupportedReason(const FrameView& frame, const EncodeParams& params) {
  if (IsRgb(frame.format) || PlanesMatch(frame.format, params.subsampling)) return "";
  return std::string("libjpeg-turbo has no entry for ") + PixelFormatName(frame.format) + " to " +
         SubsamplingName(params.subsampling);
}

StatusOr<std::vector<uint8_t>> EncodeWithLibjpegTurbo(const FrameView& frame, const EncodeParams& params,
                                                      int restart_interval) {
  const std::string why = ReferenceUnsupportedReason(frame, params);
  if (!why.empty()) return Unimplemented(why);

  if (!IsRgb(frame.format)) {
    std::unique_ptr<void, TjDeleter> tj(tjInitCompress());
    if (!tj) return Internal("tjInitCompress failed");
    const unsigned char* planes[3] = {frame.plane[0], frame.plane[1], frame.plane[2]};
    int strides[3] = {frame.stride[0], frame.stride[1], frame.stride[2]};
    unsigned char* buf = nullptr;
    unsigned long size = 0;
    if (tjCompressFromYUVPlanes(tj.get(), planes, frame.width, strides, frame.height,
                                TjSubsamp(params.subsampling), &buf, &size, params.quality, 0) != 0) {
      return Internal(std::string("tjCompressFromYUVPlanes: ") + tjGetErrorStr2(tj.get()));
    }
    std::unique_ptr<unsigned char, TjBufferDeleter> owned(buf);
    return std::vector<uint8_t>(buf, buf + size);
  }

  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jpeg_create_compress(&cinfo);
  std::unique_ptr<jpeg_compress_struct, CompressDeleter> guard(&cinfo);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buf, &size);
  cinfo.image_width = frame.width;
  cinfo.image_height = frame.height;
  cinfo.input_components = LayoutOf(frame.format).bytes_per_pixel;
  cinfo.in_color_space = JpegColorSpace(frame.format);
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, params.quality, TRUE);
  cinfo.comp_info[0].h_samp_factor = params.subsampling == Subsampling::k444 ? 1 : 2;
  cinfo.comp_info[0].v_samp_factor = params.subsampling == Subsampling::k420 ? 2 : 1;
  cinfo.restart_interval = restart_interval;
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(frame.plane[0] + static_cast<size_t>(cinfo.next_scanline) * frame.stride[0]);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::vector<uint8_t> out(buf, buf + size);
  free(buf);
  return out;
}

}  // namespace conveyor::bench
