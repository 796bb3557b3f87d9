// The rendition scaler's kernel: a 16 x 16 tile of destination pixels a CTA, a thread
// per pixel (every channel of it), grid.z over the planes. A tile's 16 column taps and
// 16 row taps are worked out once, by the first two rows of threads, and shared.
// Measured on the H200 (1080p -> 720p yuv420p, Nsight Compute): 33 us with a thread per
// sample, and still 33 us with the taps shared; 20 us once the plane's entries of the
// parameter arrays were picked with constant indices (Pick), where indexing them by
// blockIdx.z had every thread copy the arrays to local memory (5.6 M L2 sectors ->
// 0.43 M). 32 x 32 tiles of a thread per column every eighth row: 18 us, and 12 us
// against 9.6 for 1080p -> 360p, so no gain. Nothing depends on the warp or wavefront
// width.
#include "gpu_scale.h"

#include <string>

#include "gpu_runtime.h"
#include "stage_scale.h"

namespace conveyor {
namespace {

constexpr int kScaleTile = 16;

// Element `i` (< 3) of a kernel parameter's array, picked with constant indices: an
// index known only at run time made the compiler copy the whole array into local memory
// for every thread.
template <class T>
__device__ inline T Pick(const T (&a)[3], int i) {
  return i == 0 ? a[0] : i == 1 ? a[1] : a[2];
}

__global__ void ScaleKernel(ScalePlan p, SourcePlanes s, uint8_t* dst) {
  __shared__ AxisTaps column_taps[kScaleTile], row_taps[kScaleTile];
  const int plane = blockIdx.z;
  const ScalePlaneGeom g = Pick(p.plane, plane);
  const int x0 = blockIdx.x * kScaleTile, y0 = blockIdx.y * kScaleTile;
  if (x0 >= g.dst_w || y0 >= g.dst_h) return;  // the whole tile is outside this plane
  const int tx = threadIdx.x, ty = threadIdx.y;
  if (ty == 0 && x0 + tx < g.dst_w) column_taps[tx] = AxisTapsFor(g.src_w, g.dst_w, g.filter_x, x0 + tx);
  if (ty == 1 && y0 + tx < g.dst_h) row_taps[tx] = AxisTapsFor(g.src_h, g.dst_h, g.filter_y, y0 + tx);
  __syncthreads();
  const int x = x0 + tx, y = y0 + ty;
  if (x >= g.dst_w || y >= g.dst_h) return;
  const AxisTaps cx = column_taps[tx], cy = row_taps[ty];
  uint8_t* out = dst + Pick(p.dst_offset, plane) + static_cast<size_t>(y) * Pick(p.dst_row_bytes, plane) + x * g.channels;
  const uint8_t* src = Pick(s.plane, plane);
  const int stride = Pick(s.stride, plane);
  for (int c = 0; c < g.channels; ++c) out[c] = ScaleSampleFromTaps(g, src, stride, cx, cy, c);
}

}  // namespace

Status EnqueueScale(const ScalePlan& p, const SourcePlanes& s, uint8_t* dst, hipStream_t stream) {
  if (dst == nullptr) return InvalidArgument("EnqueueScale: destination buffer is null");
  int max_width = 0, max_rows = 0;
  for (int i = 0; i < p.num_planes; ++i) {
    if (s.plane[i] == nullptr) {
      return InvalidArgument("EnqueueScale: source plane " + std::to_string(i) + " is null");
    }
    if (s.stride[i] < p.SrcRowBytes(i)) {
      return InvalidArgument("EnqueueScale: stride " + std::to_string(s.stride[i]) + " of plane " +
                             std::to_string(i) + " is shorter than a row (" +
                             std::to_string(p.SrcRowBytes(i)) + " bytes)");
    }
    if (p.plane[i].dst_w > max_width) max_width = p.plane[i].dst_w;
    if (p.plane[i].dst_h > max_rows) max_rows = p.plane[i].dst_h;
  }
  // At most 16384 / 16 blocks across and down: inside every limit.
  const dim3 block(kScaleTile, kScaleTile, 1);
  const dim3 grid((max_width + kScaleTile - 1) / kScaleTile, (max_rows + kScaleTile - 1) / kScaleTile,
                  p.num_planes);
  hipLaunchKernelGGL(ScaleKernel, grid, block, 0, stream, p, s, dst);
  GPU_RETURN_IF_ERROR(hipGetLastError(),
                      "launch ScaleKernel (" + std::to_string(p.src_width) + "x" +
                          std::to_string(p.src_height) + " -> " + std::to_string(p.dst_width) + "x" +
                          std::to_string(p.dst_height) + " " + PixelFormatName(p.format) + ")");
  return OkStatus();
}

}  // namespace conveyor
