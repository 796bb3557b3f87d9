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
// A device's hardware decoders are created and destroyed one at a time. The 9-minute
// decode soak on the GPU host crashed the daemon inside libnvcuvid's cuvidDestroyDecoder,
// called from the GPU worker's delivery thread as it freed the last frame of a session
// whose decoder had closed, while other sessions created and destroyed theirs. So the
// frames that reach the encoder are freed on the device's release thread (DeviceFrameOwner),
// a batch at a time under LockDecoderLifecycle, and ContainerDecoder takes the same lock to
// create a hardware decoder (its calls until the first get_format) and to close one.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

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

class SurfaceGate;

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
  uint64_t held_surface_bytes() const { return held_bytes_.load(); }
  // The GPU's video decode engines (NVDEC, from the driver: NvdecEngineCount); -1 where
  // unknown (VA-API has no such count).
  int engines() const { return engines_; }

  // Held while a hardware decoder is created (the decoder's calls until its first
  // get_format) or closed (avcodec_free_context), and while the release thread frees
  // frames: on one device these never overlap.
  std::unique_lock<std::mutex> LockDecoderLifecycle() const { return std::unique_lock<std::mutex>(lifecycle_mu_); }

 private:
  friend class DeviceFrameOwner;
  HwDecodeDevice(AVBufferRef* device, AVHWDeviceType type, AVPixelFormat hw_format);
  // A frame whose owner is done with it, on its way to the release thread.
  struct Released {
    FramePtr frame;
    std::shared_ptr<SurfaceGate> gate;
    uint64_t bytes = 0;
  };
  // Queues `r` for the release thread (started with the first frame), which frees it under
  // the lifecycle lock, then takes its bytes off held_surface_bytes and gives its surface
  // back to its gate. Never blocks on a decoder's creation: the GPU worker's delivery
  // thread calls it.
  void Release(Released r);
  void ReleaseLoop();
  // Takes `ref`, an initialised CUDA device, and counts its context's engines.
  static std::shared_ptr<HwDecodeDevice> OwnCudaDevice(AVBufferRef* ref);
  AVBufferRef* device_;
  const AVHWDeviceType type_;
  const AVPixelFormat hw_format_;
  int engines_ = -1;
  std::unique_ptr<SharedLibrary> video_library_;  // CUDA: libnvcuvid.so.1, kept loaded
  std::atomic<uint64_t> held_bytes_{0};
  mutable std::mutex lifecycle_mu_;
  std::mutex release_mu_;  // guards the queue, stopping_ and the thread's start
  std::condition_variable release_cv_;
  std::deque<Released> release_queue_;
  bool stopping_ = false;
  std::thread release_thread_;  // declared last: joined (the queue emptied) before the rest goes
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

// Counts the device frames a session holds, up to its bound.
class SurfaceGate {
 public:
  explicit SurfaceGate(int bound = kDefaultHeldDeviceFrames) : bound_(bound) {}
  // Waits until fewer than the bound are held, or `timeout` passes; false on timeout.
  bool WaitForRoom(std::chrono::milliseconds timeout);
  int held() const;
  void Take();  // one more frame held (DeviceFrameOwner's constructor)
  void Give();  // one frame given back (once the release thread freed it); wakes a waiter

 private:
  const int bound_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int held_ = 0;
};

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
// the device's release thread, which frees it and gives the surface back to `gate`.
class DeviceFrameOwner {
 public:
  // `gate` (may be null) counts the frame as held until the release thread has freed it.
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
