// The deinterlace stage's kernel: a thread per destination column of a 32-wide tile and
// kDeinterlaceRowsPerThread of its rows, each sample DeinterlaceOutput
// (stage_deinterlace.h), so the CPU path's bytes. Reads and writes are coalesced along
// rows. Nothing depends on the warp or wavefront width.
#include "gpu_deinterlace.h"

#include <algorithm>
#include <string>

#include "gpu_runtime.h"

namespace conveyor {
namespace {

constexpr int kDeinterlaceTileW = 32, kDeinterlaceThreadsY = 8, kDeinterlaceRowsPerThread = 4;
constexpr int kDeinterlaceTileH = kDeinterlaceThreadsY * kDeinterlaceRowsPerThread;

// Element `i` (< 3) of a kernel parameter's array, picked with constant indices so the
// array stays in registers (as gpu_orient.hip does).
template <class T>
__device__ inline T Pick(const T (&a)[3], int i) {
  return i == 0 ? a[0] : i == 1 ? a[1] : a[2];
}

__global__ void DeinterlaceKernel(DeinterlacePlan p, SourcePlanes prev, SourcePlanes cur, SourcePlanes next,
                                  uint8_t* dst) {
  const int plane = blockIdx.z;
  const DeinterlacePlaneGeom g = Pick(p.plane, plane);
  const int x = blockIdx.x * kDeinterlaceTileW + threadIdx.x;
  if (x >= g.w) return;
  DeinterlaceInputs in;
  in.base[kDeinterlacePrev] = Pick(prev.plane, plane);
  in.base[kDeinterlaceCur] = Pick(cur.plane, plane);
  in.base[kDeinterlaceNext] = Pick(next.plane, plane);
  in.stride[kDeinterlacePrev] = Pick(prev.stride, plane);
  in.stride[kDeinterlaceCur] = Pick(cur.stride, plane);
  in.stride[kDeinterlaceNext] = Pick(next.stride, plane);
  in.channels = g.channels;
  uint8_t* out = dst + Pick(p.dst_offset, plane) + x * g.channels;
  const int row_bytes = Pick(p.dst_row_bytes, plane);
  for (int k = 0; k < kDeinterlaceRowsPerThread; ++k) {
    const int y = blockIdx.y * kDeinterlaceTileH + k * kDeinterlaceThreadsY + threadIdx.y;
    if (y >= g.h) return;
    uint8_t* o = out + static_cast<size_t>(y) * row_bytes;
    for (int c = 0; c < g.channels; ++c) {
      DeinterlaceInputs channel = in;
      for (int f = 0; f < 3; ++f) channel.base[f] += c;
      o[c] = DeinterlaceOutput(channel, g, p.top_field_first, x, y);
    }
  }
}

std::string Describe(const DeinterlacePlan& p) {
  return std::string(p.top_field_first ? "tff " : "bff ") + std::to_string(p.width) + "x" +
         std::to_string(p.height) + " " + PixelFormatName(p.format);
}

Status CheckSource(const DeinterlacePlan& p, const SourcePlanes& s, const char* which) {
  for (int i = 0; i < p.num_planes; ++i) {
    if (s.plane[i] == nullptr) {
      return InvalidArgument(std::string("EnqueueDeinterlace: ") + which + " plane " + std::to_string(i) + " is null");
    }
    const int row = p.plane[i].w * p.plane[i].channels;
    if (s.stride[i] < row) {
      return InvalidArgument(std::string("EnqueueDeinterlace: ") + which + " stride " + std::to_string(s.stride[i]) +
                             " of plane " + std::to_string(i) + " is shorter than a row (" + std::to_string(row) +
                             " bytes)");
    }
  }
  return OkStatus();
}

}  // namespace

Status EnqueueDeinterlace(const DeinterlacePlan& p, const SourcePlanes& prev, const SourcePlanes& cur,
                          const SourcePlanes& next, uint8_t* dst, hipStream_t stream) {
  if (dst == nullptr) return InvalidArgument("EnqueueDeinterlace: destination buffer is null");
  RETURN_IF_ERROR(CheckSource(p, prev, "previous"));
  RETURN_IF_ERROR(CheckSource(p, cur, "current"));
  RETURN_IF_ERROR(CheckSource(p, next, "next"));
  int max_w = 0, max_h = 0;
  for (int i = 0; i < p.num_planes; ++i) {
    max_w = std::max(max_w, p.plane[i].w);
    max_h = std::max(max_h, p.plane[i].h);
  }
  const dim3 grid((max_w + kDeinterlaceTileW - 1) / kDeinterlaceTileW,
                  (max_h + kDeinterlaceTileH - 1) / kDeinterlaceTileH, p.num_planes);
  hipLaunchKernelGGL(DeinterlaceKernel, grid, dim3(kDeinterlaceTileW, kDeinterlaceThreadsY), 0, stream, p, prev, cur,
                     next, dst);
  GPU_RETURN_IF_ERROR(hipGetLastError(), "launch DeinterlaceKernel (" + Describe(p) + ")");
  return OkStatus();
}

}  // namespace conveyor
