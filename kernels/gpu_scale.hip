// The rendition scaler's kernel: one thread per destination byte (sample x channel), a
// 2-D grid over the largest plane and grid.z over the planes. Threads do not cooperate,
// so nothing depends on the warp or wavefront width.
#include "gpu_scale.h"

#include <string>

#include "gpu_runtime.h"
#include "stage_scale.h"

namespace conveyor {
namespace {

constexpr int kScaleTile = 16;  // 16x16 threads; consecutive x are consecutive bytes

__global__ void ScaleKernel(ScalePlan p, SourcePlanes s, uint8_t* dst) {
  const int plane = blockIdx.z;
  const ScalePlaneGeom g = p.plane[plane];
  const int xb = blockIdx.x * blockDim.x + threadIdx.x;  // byte within the row
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (xb >= g.dst_w * g.channels || y >= g.dst_h) return;
  const int x = xb / g.channels;
  const int c = xb - x * g.channels;
  dst[p.dst_offset[plane] + static_cast<size_t>(y) * p.dst_row_bytes[plane] + xb] =
      ScaleSample(g, s.plane[plane], s.stride[plane], x, y, c);
}

}  // namespace

Status EnqueueScale(const ScalePlan& p, const SourcePlanes& s, uint8_t* dst, hipStream_t stream) {
  if (dst == nullptr) return InvalidArgument("EnqueueScale: destination buffer is null");
  int max_row_bytes = 0, max_rows = 0;
  for (int i = 0; i < p.num_planes; ++i) {
    if (s.plane[i] == nullptr) {
      return InvalidArgument("EnqueueScale: source plane " + std::to_string(i) + " is null");
    }
    if (s.stride[i] < p.SrcRowBytes(i)) {
      return InvalidArgument("EnqueueScale: stride " + std::to_string(s.stride[i]) + " of plane " +
                             std::to_string(i) + " is shorter than a row (" +
                             std::to_string(p.SrcRowBytes(i)) + " bytes)");
    }
    if (p.dst_row_bytes[i] > max_row_bytes) max_row_bytes = p.dst_row_bytes[i];
    if (p.plane[i].dst_h > max_rows) max_rows = p.plane[i].dst_h;
  }
  // At most 16384 * 4 / 16 blocks across and 16384 / 16 down: inside every limit.
  const dim3 block(kScaleTile, kScaleTile, 1);
  const dim3 grid((max_row_bytes + kScaleTile - 1) / kScaleTile, (max_rows + kScaleTile - 1) / kScaleTile,
                  p.num_planes);
  hipLaunchKernelGGL(ScaleKernel, grid, block, 0, stream, p, s, dst);
  GPU_RETURN_IF_ERROR(hipGetLastError(),
                      "launch ScaleKernel (" + std::to_string(p.src_width) + "x" +
                          std::to_string(p.src_height) + " -> " + std::to_string(p.dst_width) + "x" +
                          std::to_string(p.dst_height) + " " + PixelFormatName(p.format) + ")");
  return OkStatus();
}

}  // namespace conveyor
