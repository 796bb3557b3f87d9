// The orientation stage's kernel: a thread per destination column of a 32-wide tile and
// kOrientRowsPerThread of its rows, each sample a copy of the source sample OrientSource
// names (stage_orient.h), so the CPU path's bytes. Writes are coalesced along rows; under
// a transpose the reads walk a source column. Nothing depends on the warp or wavefront
// width.
#include "gpu_orient.h"

#include <algorithm>
#include <string>

#include "gpu_runtime.h"

namespace conveyor {
namespace {

constexpr int kOrientTileW = 32, kOrientThreadsY = 8, kOrientRowsPerThread = 4;
constexpr int kOrientTileH = kOrientThreadsY * kOrientRowsPerThread;

// Element `i` (< 3) of a kernel parameter's array, picked with constant indices so the
// array stays in registers (see gpu_scale.hip).
template <class T>
__device__ inline T Pick(const T (&a)[3], int i) {
  return i == 0 ? a[0] : i == 1 ? a[1] : a[2];
}

__global__ void OrientKernel(OrientPlan p, SourcePlanes s, uint8_t* dst) {
  const int plane = blockIdx.z;
  const OrientPlaneGeom g = Pick(p.plane, plane);
  const int x = blockIdx.x * kOrientTileW + threadIdx.x;
  if (x >= g.dst_w) return;
  const uint8_t* src = Pick(s.plane, plane);
  const int stride = Pick(s.stride, plane);
  uint8_t* out = dst + Pick(p.dst_offset, plane) + x * g.channels;
  const int row_bytes = Pick(p.dst_row_bytes, plane);
  for (int k = 0; k < kOrientRowsPerThread; ++k) {
    const int y = blockIdx.y * kOrientTileH + k * kOrientThreadsY + threadIdx.y;
    if (y >= g.dst_h) return;
    int sx = 0, sy = 0;
    OrientSource(p.orientation, g, x, y, &sx, &sy);
    const uint8_t* in = src + static_cast<size_t>(sy) * stride + sx * g.channels;
    uint8_t* o = out + static_cast<size_t>(y) * row_bytes;
    for (int c = 0; c < g.channels; ++c) o[c] = in[c];
  }
}

std::string Describe(const OrientPlan& p) {
  return std::string(OrientationName(p.orientation)) + " " + std::to_string(p.src_width) + "x" +
         std::to_string(p.src_height) + " " + PixelFormatName(p.src_format);
}

}  // namespace

Status EnqueueOrient(const OrientPlan& p, const SourcePlanes& src, uint8_t* dst, hipStream_t stream) {
  if (dst == nullptr) return InvalidArgument("EnqueueOrient: destination buffer is null");
  int max_w = 0, max_h = 0;
  for (int i = 0; i < p.num_planes; ++i) {
    if (src.plane[i] == nullptr) return InvalidArgument("EnqueueOrient: source plane " + std::to_string(i) + " is null");
    const int row = p.plane[i].src_w * p.plane[i].channels;
    if (src.stride[i] < row) {
      return InvalidArgument("EnqueueOrient: stride " + std::to_string(src.stride[i]) + " of plane " +
                             std::to_string(i) + " is shorter than a row (" + std::to_string(row) + " bytes)");
    }
    max_w = std::max(max_w, p.plane[i].dst_w);
    max_h = std::max(max_h, p.plane[i].dst_h);
  }
  const dim3 grid((max_w + kOrientTileW - 1) / kOrientTileW, (max_h + kOrientTileH - 1) / kOrientTileH,
                  p.num_planes);
  hipLaunchKernelGGL(OrientKernel, grid, dim3(kOrientTileW, kOrientThreadsY), 0, stream, p, src, dst);
  GPU_RETURN_IF_ERROR(hipGetLastError(), "launch OrientKernel (" + Describe(p) + ")");
  return OkStatus();
}

}  // namespace conveyor
