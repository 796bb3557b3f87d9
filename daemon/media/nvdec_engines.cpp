#include "nvdec_engines.h"

#include <dlfcn.h>

#include <cstdint>

namespace conveyor::media {
namespace {

// CUVIDDECODECAPS as the NVIDIA Video Codec SDK's cuviddec.h lays it out (SDK 11 and
// later: nNumNVDECs is where older SDKs had a reserved byte, which they left at 0).
struct DecoderCaps {
  int codec;           // cudaVideoCodec: H.264 is 4
  int chroma_format;   // cudaVideoChromaFormat: 4:2:0 is 1
  unsigned int bit_depth_minus_8;
  unsigned int reserved1[3];
  unsigned char is_supported;
  unsigned char num_nvdecs;
  unsigned short output_format_mask;
  unsigned int max_width, max_height, max_mb_count;
  unsigned short min_width, min_height;
  unsigned char is_histogram_supported, counter_bit_depth;
  unsigned short max_histogram_bins;
  unsigned int reserved3[10];
};
constexpr int kCodecH264 = 4;
constexpr int kChroma420 = 1;

}  // namespace

int NvdecEngineCount(void* cu_context) {
  if (cu_context == nullptr) return -1;
  SharedLibrary cuda("libcuda.so.1"), cuvid("libnvcuvid.so.1");
  if (cuda.handle() == nullptr || cuvid.handle() == nullptr) return -1;
  using PushCurrent = int (*)(void*);
  using PopCurrent = int (*)(void**);
  using GetDecoderCaps = int (*)(DecoderCaps*);
  auto push = reinterpret_cast<PushCurrent>(dlsym(cuda.handle(), "cuCtxPushCurrent_v2"));
  auto pop = reinterpret_cast<PopCurrent>(dlsym(cuda.handle(), "cuCtxPopCurrent_v2"));
  auto caps_of = reinterpret_cast<GetDecoderCaps>(dlsym(cuvid.handle(), "cuvidGetDecoderCaps"));
  if (push == nullptr || pop == nullptr || caps_of == nullptr) return -1;
  // The query asks the context current on this thread.
  if (push(cu_context) != 0) return -1;
  DecoderCaps caps{};
  caps.codec = kCodecH264;
  caps.chroma_format = kChroma420;
  const int rc = caps_of(&caps);
  void* popped = nullptr;
  pop(&popped);
  if (rc != 0 || caps.is_supported == 0 || caps.num_nvdecs == 0) return -1;
  return caps.num_nvdecs;
}

SharedLibrary::SharedLibrary(const char* name) : handle_(dlopen(name, RTLD_NOW | RTLD_LOCAL)) {}

SharedLibrary::~SharedLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace conveyor::media
