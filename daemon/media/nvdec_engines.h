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

// A shared library dlopen()ed for as long as this lives (dlclose on every way out); not
// loaded (no such library): handle() is null. HwDecodeDevice keeps libnvcuvid.so.1 open
// in one: FFmpeg's nvdec dlopens it for each decoder it creates and dlcloses it when that
// decoder goes, so a session that started while no other decoder was open would load it
// again, initialisation and all.
class SharedLibrary {
 public:
  explicit SharedLibrary(const char* name);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  void* handle() const { return handle_; }

 private:
  void* handle_;
};

}  // namespace conveyor::media
