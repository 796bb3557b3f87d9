#include "hw_decode.h"

#include <algorithm>
#include <cctype>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/dict.h>
#include <libavutil/pixdesc.h>
}

// hwcontext_cuda.h needs only CUDA's two handle types, not the toolkit: declared here as
// the driver API declares them, so this builds on hosts with no CUDA headers.
#ifndef CUDA_VERSION
#define CUDA_VERSION 11000
typedef struct CUctx_st* CUcontext;
typedef struct CUstream_st* CUstream;
#endif
extern "C" {
#include <libavutil/hwcontext_cuda.h>
}

#include "nvdec_engines.h"

namespace conveyor::media {

const char* DecodeModeName(DecodeMode m) {
  switch (m) {
    case DecodeMode::kAuto: return "auto";
    case DecodeMode::kGpu: return "gpu";
    case DecodeMode::kCpu: return "cpu";
  }
  return "?";
}

StatusOr<DecodeMode> ParseDecodeMode(const std::string& name) {
  if (name == "auto") return DecodeMode::kAuto;
  if (name == "gpu") return DecodeMode::kGpu;
  if (name == "cpu") return DecodeMode::kCpu;
  return InvalidArgument("decode mode \"" + name + "\" is not one of auto, gpu, cpu");
}

const char* DecodedFramesName(DecodedFrames f) { return f == DecodedFrames::kDevice ? "device" : "host"; }

StatusOr<DecodedFrames> ParseDecodedFrames(const std::string& name) {
  if (name == "device") return DecodedFrames::kDevice;
  if (name == "host") return DecodedFrames::kHost;
  return InvalidArgument("decoded frames \"" + name + "\" is not one of device, host");
}

HwDecodeDevice::HwDecodeDevice(AVBufferRef* device, AVHWDeviceType type, AVPixelFormat hw_format)
    : device_(device), type_(type), hw_format_(hw_format) {}

HwDecodeDevice::~HwDecodeDevice() {
  lifecycle_.reset();  // frees what is still queued or retired
  av_buffer_unref(&device_);
}

void HwDecodeDevice::Retire(CodecContextPtr codec, std::shared_ptr<SurfaceGate> gate) {
  if (!codec) return;
  std::shared_ptr<AVCodecContext> owned(codec.release(), [](AVCodecContext* c) { avcodec_free_context(&c); });
  lifecycle_->Retire(std::move(owned), std::move(gate));
}

const char* HwDecodeDevice::api() const { return av_hwdevice_get_type_name(type_); }

StatusOr<std::shared_ptr<HwDecodeDevice>> HwDecodeDevice::OpenCuda(int device, void* stream, void* context,
                                                                    bool primary_context) {
  if (context != nullptr) {
    // A context the caller owns: FFmpeg only loads the driver's functions for it.
    AVBufferRef* ref = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA);
    if (ref == nullptr) return Unavailable("av_hwdevice_ctx_alloc(cuda): FFmpeg without CUDA, or out of memory");
    auto* hw = reinterpret_cast<AVHWDeviceContext*>(ref->data);
    auto* cuda = static_cast<AVCUDADeviceContext*>(hw->hwctx);
    cuda->cuda_ctx = static_cast<CUcontext>(context);
    cuda->stream = static_cast<CUstream>(stream);
    const int err = av_hwdevice_ctx_init(ref);
    if (err < 0) {
      av_buffer_unref(&ref);
      return Unavailable(FfmpegError(err, "av_hwdevice_ctx_init(cuda)").message() + " (no libcuda.so.1 from the driver?)");
    }
    return OwnCudaDevice(ref);
  }
  AVDictionary* opts = nullptr;
  // The primary context is the one the CUDA runtime (and so the worker) uses on that
  // device: FFmpeg retains it instead of creating a context of its own.
  if (primary_context) av_dict_set(&opts, "primary_ctx", "1", 0);
  AVBufferRef* ref = nullptr;
  const int err = av_hwdevice_ctx_create(&ref, AV_HWDEVICE_TYPE_CUDA, std::to_string(device).c_str(), opts, 0);
  av_dict_free(&opts);
  if (err < 0) {
    return Unavailable(FfmpegError(err, "av_hwdevice_ctx_create(cuda)").message() +
                       " (FFmpeg without CUDA, or no libcuda.so.1 from the driver)");
  }
  auto* hw = reinterpret_cast<AVHWDeviceContext*>(ref->data);
  static_cast<AVCUDADeviceContext*>(hw->hwctx)->stream = static_cast<CUstream>(stream);
  return OwnCudaDevice(ref);
}

std::shared_ptr<HwDecodeDevice> HwDecodeDevice::OwnCudaDevice(AVBufferRef* ref) {
  std::shared_ptr<HwDecodeDevice> d(new HwDecodeDevice(ref, AV_HWDEVICE_TYPE_CUDA, AV_PIX_FMT_CUDA));
  const auto* hw = reinterpret_cast<const AVHWDeviceContext*>(ref->data);
  d->video_library_ = std::make_unique<SharedLibrary>("libnvcuvid.so.1");  // loaded once, before the count
  d->engines_ = NvdecEngineCount(static_cast<const AVCUDADeviceContext*>(hw->hwctx)->cuda_ctx);
  return d;
}

StatusOr<std::shared_ptr<HwDecodeDevice>> HwDecodeDevice::OpenVaapi(const std::string& pci_bus_id,
                                                                    const std::string& render_node) {
  std::string node = render_node;
  if (node.empty()) {
    std::string id = pci_bus_id;
    std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
    node = "/dev/dri/by-path/pci-" + id + "-render";
  }
  AVBufferRef* ref = nullptr;
  const int err = av_hwdevice_ctx_create(&ref, AV_HWDEVICE_TYPE_VAAPI, node.c_str(), nullptr, 0);
  if (err < 0) return Unavailable(FfmpegError(err, ("av_hwdevice_ctx_create(vaapi, " + node + ")").c_str()).message());
  return std::shared_ptr<HwDecodeDevice>(new HwDecodeDevice(ref, AV_HWDEVICE_TYPE_VAAPI, AV_PIX_FMT_VAAPI));
}

bool DecoderTakes(const AVCodec* codec, AVHWDeviceType type, std::string* why) {
  auto refuse = [&](std::string reason) {
    if (why != nullptr) *why = std::move(reason);
    return false;
  };
  const auto no_hwaccel = [&] {
    return refuse(std::string("FFmpeg's ") + codec->name + " decoder has no " + av_hwdevice_get_type_name(type) +
                  " hwaccel");
  };
  switch (codec->id) {
    case AV_CODEC_ID_H264:
    case AV_CODEC_ID_HEVC:
    case AV_CODEC_ID_VP9:
    case AV_CODEC_ID_AV1:
      break;
    case AV_CODEC_ID_MPEG2VIDEO:
    case AV_CODEC_ID_MJPEG:
      // Both have hwaccels, but their IDCT is not bit-exact: the engines give other pixels
      // than the CPU decoder (every frame of an MPEG-2 clip differed on the GPU host), for
      // a decode the CPU does cheaply. Output does not depend on where a stream decodes.
      return refuse(std::string("the video engines' ") + codec->name +
                    " pictures are not the CPU decoder's (its IDCT is not exact)");
    default:
      return no_hwaccel();
  }
  for (int i = 0;; ++i) {
    const AVCodecHWConfig* c = avcodec_get_hw_config(codec, i);
    if (c == nullptr) return no_hwaccel();
    if ((c->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX) != 0 && c->device_type == type) return true;
  }
}

AVPixelFormat GetFormat(AVCodecContext* ctx, const AVPixelFormat* formats) {
  auto* state = static_cast<HwDecodeState*>(ctx->opaque);
  bool offered = false;
  AVPixelFormat software = AV_PIX_FMT_NONE;
  for (const AVPixelFormat* p = formats; *p != AV_PIX_FMT_NONE; ++p) {
    if (*p == state->hw_format) {
      offered = true;
    } else if (software == AV_PIX_FMT_NONE) {
      const AVPixFmtDescriptor* d = av_pix_fmt_desc_get(*p);
      if (d != nullptr && (d->flags & AV_PIX_FMT_FLAG_HWACCEL) == 0) software = *p;
    }
  }
  // FFmpeg asks again, without the device format, when the hwaccel failed to start on it.
  if (state->hardware && !offered) state->refused = true;
  state->asked = true;
  state->software_format = software;
  state->hardware = offered && !state->refused;
  return state->hardware ? state->hw_format : software;
}

Status AttachHwDevice(AVCodecContext* ctx, const HwDecodeDevice& device, HwDecodeState* state, int held_frames) {
  ctx->hw_device_ctx = av_buffer_ref(device.device_ref());
  if (ctx->hw_device_ctx == nullptr) return ResourceExhausted("av_buffer_ref(hw device): out of memory");
  *state = HwDecodeState{};
  state->hw_format = device.hw_format();
  ctx->opaque = state;
  ctx->get_format = GetFormat;
  ctx->thread_count = 1;
  ctx->extra_hw_frames = held_frames;
  return OkStatus();
}

DeviceFrameOwner::DeviceFrameOwner(std::shared_ptr<HwDecodeDevice> device, FramePtr frame,
                                   std::shared_ptr<SurfaceGate> gate)
    : device_(std::move(device)), frame_(std::move(frame)), gate_(std::move(gate)) {
  bytes_ = static_cast<uint64_t>(frame_->linesize[0]) * frame_->height +
           static_cast<uint64_t>(frame_->linesize[1]) * ((frame_->height + 1) / 2);
  device_->lifecycle_->Hold(bytes_, gate_.get());
}

DeviceFrameOwner::~DeviceFrameOwner() {
  device_->lifecycle_->Free(std::move(frame_), std::move(gate_), bytes_);
}

StatusOr<DeviceFrameView> ViewOfDeviceFrame(const AVFrame& frame, UntaggedMatrix untagged) {
  if (frame.hw_frames_ctx == nullptr) return InvalidArgument("a device frame without a frames context");
  if (frame.data[0] == nullptr || frame.data[1] == nullptr) return InvalidArgument("a device frame without a surface");
  const auto* frames = reinterpret_cast<const AVHWFramesContext*>(frame.hw_frames_ctx->data);
  DeviceFrameView out;
  if (frames->sw_format == AV_PIX_FMT_P010) {
    out.p010 = true;
  } else if (frames->sw_format != AV_PIX_FMT_NV12) {
    const char* name = av_get_pix_fmt_name(frames->sw_format);
    return InvalidArgument(std::string("device surfaces of ") + (name ? name : "an unknown format") +
                           " are not taken (nv12 and p010 are)");
  }
  const FrameColor color = ColorOf(frame, untagged);
  out.view.width = frame.width;
  out.view.height = frame.height;
  out.view.format = PixelFormat::kNv12;
  out.view.matrix = color.matrix;
  out.view.range = color.range;
  for (int p = 0; p < 2; ++p) {
    out.view.plane[p] = frame.data[p];
    out.view.stride[p] = frame.linesize[p];
  }
  return out;
}

StatusOr<FramePtr> TransferToHost(const AVFrame& hw) {
  FramePtr host(av_frame_alloc());
  if (!host) return ResourceExhausted("av_frame_alloc: out of memory");
  int err = av_hwframe_transfer_data(host.get(), &hw, 0);
  if (err < 0) return FfmpegError(err, "av_hwframe_transfer_data");
  if ((err = av_frame_copy_props(host.get(), &hw)) < 0) return FfmpegError(err, "av_frame_copy_props");
  return host;
}

}  // namespace conveyor::media
