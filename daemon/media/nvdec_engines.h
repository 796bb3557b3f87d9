// How many video decode engines (NVDEC) an NVIDIA GPU has, from the driver's
// cuvidGetDecoderCaps, read through libnvcuvid.so.1 loaded at run time (as FFmpeg's nvdec
// loads it), so that nothing NVIDIA is needed to build or start the daemon.
#pragma once

namespace conveyor::media {

// The engines of the GPU whose CUDA context is `cu_context` (a CUcontext) that decode
// H.264 4:2:0 8-bit: the driver counts them per codec, and every NVDEC takes H.264.
// -1 when the driver's libraries or the query are not there (no NVIDIA driver, a driver
// without the count).
int NvdecEngineCount(void* cu_context);

// libnvcuvid.so.1 held open while this lives. FFmpeg's nvdec dlopens the library for each
// decoder it creates and dlcloses it when that decoder goes, so a session that starts
// while no other decoder is open would load it again, initialisation and all; a device
// that keeps one of these spares its sessions that. Not loaded (no NVIDIA driver): a
// no-op.
class VideoDecodeLibrary {
 public:
  VideoDecodeLibrary();
  ~VideoDecodeLibrary();
  VideoDecodeLibrary(const VideoDecodeLibrary&) = delete;
  VideoDecodeLibrary& operator=(const VideoDecodeLibrary&) = delete;
  bool loaded() const { return handle_ != nullptr; }

 private:
  void* handle_;
};

}  // namespace conveyor::media
