// Hardware decoding through FFmpeg's hwaccel API (hw_device_ctx and get_format, as in
// FFmpeg's own doc/examples/hw_decode.c), on the video engines of the GPU that encodes the
// session: NVDEC through the `cuda` hwaccel, AMD's VCN through `vaapi`.
//
// HwDecodeDevice owns the AVHWDeviceContext of one GPU worker. On NVIDIA it works in the
// device's primary CUDA context, the one the worker's runtime uses, and queues the
// decoder's copies on the worker's decode stream, so the worker can order its own copy
// of a surface after them with an event. HwDecodeState is a decoder's side: it offers the
// device's pixel format in get_format and remembers what FFmpeg made of the offer.
//
// A device's hardware decoders are created and torn down one at a time, and the frames
// that reach the encoder freed, by its DecoderLifecycle (decoder_lifecycle.h): frames
// through DeviceFrameOwner, a decoder's creation (its calls until the first get_format)
// under BeginCreation, and a closed decoder through Retire, whose teardown waits for a
// moment when no creation does.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "decoder_lifecycle.h"
#include "ffmpeg_handles.h"
#include "frame_convert.h"
#include "nvdec_engines.h"
#include "status.h"

extern "C" {
#include <libavutil/hwcontext.h>
}

namespace conveyor::media {

// Where decoding runs: `auto` takes the video engines for what they take and the CPU
// for the rest, `gpu` requires the engines, `cpu` never uses them.
enum class DecodeMode { kAuto, kGpu, kCpu };
const char* DecodeModeName(DecodeMode m);
StatusOr<DecodeMode> ParseDecodeMode(const std::string& name);

// How hardware-decoded frames reach the encoder: left in device memory for the GPU
// worker to copy device to device (`device`, CUDA only), or copied to host memory with
// av_hwframe_transfer_data first (`host`: VA-API's path, and a forced mode elsewhere).
enum class DecodedFrames { kDevice, kHost };
const char* DecodedFramesName(DecodedFrames f);
StatusOr<DecodedFrames> ParseDecodedFrames(const std::string& name);

class HwDecodeDevice {
 public:
  // NVIDIA: FFmpeg's CUDA device in `context` (a CUcontext: the worker's own, which FFmpeg
  // uses and never destroys), or, without one, in runtime device `device`'s primary
  // context as FFmpeg takes it (or, with `primary_context` false, in a context of its
  // own); the decoder's copies go on `stream` (a CUstream).
  // UNAVAILABLE when FFmpeg cannot load the driver's libcuda or has no CUDA support.
  static StatusOr<std::shared_ptr<HwDecodeDevice>> OpenCuda(int device, void* stream, void* context = nullptr,
                                                             bool primary_context = true);
  // AMD (or any VA-API device): the render node of the GPU at PCI bus id `pci_bus_id`
  // (/dev/dri/by-path/pci-<id>-render), or `render_node` when it is given.
  static StatusOr<std::shared_ptr<HwDecodeDevice>> OpenVaapi(const std::string& pci_bus_id,
                                                             const std::string& render_node = "");

  HwDecodeDevice(const HwDecodeDevice&) = delete;
  HwDecodeDevice& operator=(const HwDecodeDevice&) = delete;
  ~HwDecodeDevice();

  AVBufferRef* device_ref() const { return device_; }
  AVHWDeviceType type() const { return type_; }
  AVPixelFormat hw_format() const { return hw_format_; }  // AV_PIX_FMT_CUDA, AV_PIX_FMT_VAAPI
  const char* api() const;                                 // "cuda", "vaapi"
  // Frames may stay in device memory (CUDA); VA-API surfaces are transferred to the host.
  bool device_frames() const { return type_ == AV_HWDEVICE_TYPE_CUDA; }

  // Device bytes of decoded surfaces that frames on their way to the encoder hold now
  // (DeviceFrameOwner), over every session on this device.
  uint64_t held_surface_bytes() const { return lifecycle_->held_bytes(); }
  // The GPU's video decode engines (NVDEC, from the driver: NvdecEngineCount); -1 where
  // unknown (VA-API has no such count).
  int engines() const { return engines_; }

  // The lock of a decoder's creation (DecoderLifecycle::BeginCreation), ahead of teardowns.
  DecoderLifecycle::Creation BeginDecoderCreation() { return lifecycle_->BeginCreation(); }
  // Hands a closed codec context of this device to the lifecycle's thread, whose teardown
  // of it waits until `gate` (the session's, may be null) holds no frame and no creation
  // runs (DecoderLifecycle::Retire). Never blocks.
  void Retire(CodecContextPtr codec, std::shared_ptr<SurfaceGate> gate);
  // Decoders retired and not yet torn down, torn down so far, and the seconds that took.
  std::size_t retired_decoders() const { return lifecycle_->retired(); }
  uint64_t decoder_teardowns() const { return lifecycle_->teardowns(); }
  double decoder_teardown_seconds() const { return lifecycle_->teardown_seconds(); }

 private:
  friend class DeviceFrameOwner;
  HwDecodeDevice(AVBufferRef* device, AVHWDeviceType type, AVPixelFormat hw_format);
  // Takes `ref`, an initialised CUDA device, and counts its context's engines.
  static std::shared_ptr<HwDecodeDevice> OwnCudaDevice(AVBufferRef* ref);
  AVBufferRef* device_;
  const AVHWDeviceType type_;
  const AVPixelFormat hw_format_;
  int engines_ = -1;
  std::unique_ptr<SharedLibrary> video_library_;  // CUDA: libnvcuvid.so.1, kept loaded
  // Gone first (the destructor resets it): its thread frees every frame and decoder of
  // this device before the device context goes.
  std::unique_ptr<DecoderLifecycle> lifecycle_ = std::make_unique<DecoderLifecycle>();
};

// Whether `codec` is offered `type`'s device: a codec whose decoding the standards make
// exact (H.264, HEVC, VP9, AV1; not MPEG-2 or MJPEG, whose IDCT is not), and a decoder
// with that hwaccel (FFmpeg's native ones; libdav1d has none). When not, `why` (if given)
// says why, for Started's note and the refusal of `decode: gpu`.
bool DecoderTakes(const AVCodec* codec, AVHWDeviceType type, std::string* why = nullptr);

// The device frames one session may hold at a time between the decoder and the encoder
// (the deinterlace window's two, and those queued or uploading): decode.held_frames.
// FFmpeg's nvdec maps its output surfaces in place, and a decoder has only its reference
// frames, two spares and AVCodecContext::extra_hw_frames of them: AttachHwDevice asks for
// as many extra as the bound, and the session waits for a surface to come back before it
// decodes past the bound (SurfaceGate). A decoder out of surfaces would start frames it
// cannot decode.
constexpr int kDefaultHeldDeviceFrames = 8;
constexpr int kMinHeldDeviceFrames = 2;   // the deinterlace window holds two
constexpr int kMaxHeldDeviceFrames = 24;  // with the references, near the 32 surfaces nvdec warns of

// A decoder's hardware state: set as AVCodecContext::opaque with GetFormat as its
// get_format. FFmpeg calls get_format when the decoder learns the stream's format; the
// device format is offered when the list has it, and when the hwaccel refuses it (a
// profile or size the engines do not take, a decoder that fails to open) FFmpeg asks
// again without it, and the software format is taken.
struct HwDecodeState {
  AVPixelFormat hw_format = AV_PIX_FMT_NONE;
  bool asked = false;     // get_format was called
  bool hardware = false;  // its last answer was the device format
  bool refused = false;   // the device format was offered and FFmpeg came back without it
  AVPixelFormat software_format = AV_PIX_FMT_NONE;  // the last list's software format
};
AVPixelFormat GetFormat(AVCodecContext* ctx, const AVPixelFormat* formats);
// Sets `ctx` up to decode on `device` (before avcodec_open2), with `held_frames` surfaces
// beyond the decoder's own for frames on their way to the encoder. One decoder thread:
// the engine does the work, and get_format then runs inside avcodec_send_packet.
Status AttachHwDevice(AVCodecContext* ctx, const HwDecodeDevice& device, HwDecodeState* state,
                      int held_frames = kDefaultHeldDeviceFrames);

// Keeps a hardware frame's surface referenced until the encoder is done with it, and
// counts its bytes in HwDecodeDevice::held_surface_bytes; on destruction the frame goes to
// the device's lifecycle thread, which frees it and gives the surface back to `gate`.
class DeviceFrameOwner {
 public:
  // `gate` (may be null) counts the frame as held until the lifecycle thread has freed it.
  DeviceFrameOwner(std::shared_ptr<HwDecodeDevice> device, FramePtr frame, std::shared_ptr<SurfaceGate> gate = nullptr);
  ~DeviceFrameOwner();
  DeviceFrameOwner(const DeviceFrameOwner&) = delete;
  DeviceFrameOwner& operator=(const DeviceFrameOwner&) = delete;
  const AVFrame& frame() const { return *frame_; }

 private:
  std::shared_ptr<HwDecodeDevice> device_;
  FramePtr frame_;
  std::shared_ptr<SurfaceGate> gate_;
  uint64_t bytes_ = 0;
};

// A CUDA frame as the encoder sees it: its planes (device pointers) as an nv12 view with
// the frame's colour, and whether they hold P010's 16-bit samples. INVALID_ARGUMENT for
// a surface format other than NV12 or P010 (4:4:4 surfaces are not taken).
struct DeviceFrameView {
  FrameView view;
  bool p010 = false;
};
StatusOr<DeviceFrameView> ViewOfDeviceFrame(const AVFrame& frame, UntaggedMatrix untagged);

// A hardware frame copied into host memory (av_hwframe_transfer_data), with its timing,
// colour and field flags carried over: NV12 or P010 as the device held it.
StatusOr<FramePtr> TransferToHost(const AVFrame& hw);

}  // namespace conveyor::media
