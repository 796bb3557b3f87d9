// The narrow stage's kernel: a thread per destination byte of a 64-wide tile and
// kNarrowRowsPerThread of its rows, each byte NarrowByte (stage_narrow.h), so the CPU
// path's bytes. blockIdx.z picks the plane: 0 luma, 1 the interleaved chroma. Reads and
// writes are coalesced along rows. Nothing depends on the warp or wavefront width.
#include "gpu_narrow.h"

#include <string>

#include "frame.h"  // kMaxDimension
#include "gpu_runtime.h"

namespace conveyor {
namespace {

constexpr int kNarrowTileW = 64, kNarrowThreadsY = 4, kNarrowRowsPerThread = 4;
constexpr int kNarrowTileH = kNarrowThreadsY * kNarrowRowsPerThread;

__global__ void NarrowP010Kernel(NarrowPlan p, const uint8_t* y_src, size_t y_pitch, const uint8_t* uv_src,
                                 size_t uv_pitch, uint8_t* dst) {
  const bool chroma = blockIdx.z != 0;
  const int row_bytes = chroma ? p.chroma_row_bytes : p.width;
  const int rows = chroma ? p.chroma_rows : p.height;
  const int b = blockIdx.x * kNarrowTileW + threadIdx.x;
  if (b >= row_bytes) return;
  const uint8_t* src = chroma ? uv_src : y_src;
  const size_t pitch = chroma ? uv_pitch : y_pitch;
  uint8_t* out = dst + (chroma ? p.chroma_offset : 0) + b;
  for (int k = 0; k < kNarrowRowsPerThread; ++k) {
    const int y = blockIdx.y * kNarrowTileH + k * kNarrowThreadsY + threadIdx.y;
    if (y >= rows) return;
    out[static_cast<size_t>(y) * row_bytes] = NarrowByte(src + y * pitch, b, y, chroma, p.full_range);
  }
}

std::string Describe(const NarrowPlan& p) {
  return std::to_string(p.width) + "x" + std::to_string(p.height) + (p.full_range ? " full" : " limited") +
         " range";
}

}  // namespace

Status EnqueueNarrowP010(const NarrowPlan& p, const uint8_t* y_src, size_t y_pitch, const uint8_t* uv_src,
                         size_t uv_pitch, uint8_t* dst, hipStream_t stream) {
  if (p.width < 1 || p.height < 1 || p.width > kMaxDimension || p.height > kMaxDimension) {
    return InvalidArgument("EnqueueNarrowP010: frame size " + Describe(p) + " is out of range");
  }
  const NarrowPlan expected = MakeNarrowPlan(p.width, p.height, p.full_range);
  if (p.chroma_row_bytes != expected.chroma_row_bytes || p.chroma_rows != expected.chroma_rows ||
      p.chroma_offset != expected.chroma_offset || p.dst_size != expected.dst_size) {
    return InvalidArgument("EnqueueNarrowP010: the plan's layout is not MakeNarrowPlan's for " + Describe(p));
  }
  if (dst == nullptr) return InvalidArgument("EnqueueNarrowP010: destination buffer is null");
  if (y_src == nullptr || uv_src == nullptr) {
    return InvalidArgument(std::string("EnqueueNarrowP010: ") + (y_src == nullptr ? "luma" : "chroma") +
                           " plane is null");
  }
  const size_t y_row = 2 * static_cast<size_t>(p.width), uv_row = 2 * static_cast<size_t>(p.chroma_row_bytes);
  if (y_pitch < y_row || uv_pitch < uv_row) {
    const bool luma = y_pitch < y_row;
    return InvalidArgument(std::string("EnqueueNarrowP010: ") + (luma ? "luma" : "chroma") + " pitch " +
                           std::to_string(luma ? y_pitch : uv_pitch) + " is shorter than a row (" +
                           std::to_string(luma ? y_row : uv_row) + " bytes)");
  }
  // The chroma rows are the wider ones at an odd width (a last pair for the last column).
  const dim3 grid((p.chroma_row_bytes + kNarrowTileW - 1) / kNarrowTileW,
                  (p.height + kNarrowTileH - 1) / kNarrowTileH, 2);
  hipLaunchKernelGGL(NarrowP010Kernel, grid, dim3(kNarrowTileW, kNarrowThreadsY), 0, stream, p, y_src, y_pitch,
                     uv_src, uv_pitch, dst);
  GPU_RETURN_IF_ERROR(hipGetLastError(), "launch NarrowP010Kernel (" + Describe(p) + ")");
  return OkStatus();
}

}  // namespace conveyor
