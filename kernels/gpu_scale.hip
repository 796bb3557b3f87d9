// The rendition scaler's kernels, both the exact integer filters of stage_scale.h, so
// both give the CPU path's bytes.
//  - SeparableScaleKernel, the usual one: a CTA makes a 32 x 16 tile of one plane. It
//    works out the tile's column and row taps once, sums each source row the tile reads
//    with the column weights into shared memory (horizontal pass), then weights those
//    sums down the columns (vertical pass): ScaleSampleFromTaps's integer sums, each
//    source row summed once a tile instead of once per destination row that reads it.
//  - ScaleKernel, where an axis has more than kSeparableMaxTaps taps (shrinking more
//    than about 7 times): a 16 x 16 tile, a thread per pixel, ScaleSampleFromTaps per
//    sample.
// Measured on the H200 with Nsight Compute, 1080p -> 720p / 360p yuv420p:
//  - ScaleKernel: 33 us with a thread per sample, still 33 with the taps shared, and
//    20.3 / 9.6 us once the plane's entries of the parameter arrays were picked with
//    constant indices (Pick): indexing them by blockIdx.z had every thread copy the
//    arrays to local memory (5.6 M L2 sectors -> 0.43 M). 32 x 32 tiles: 18 / 12 us.
//  - SeparableScaleKernel: 15.9 / 9.7 us (10.5 M warp instructions for 720p, issue-bound
//    at 64 %, 32 registers, every warp slot filled). Tried and slower: unrolled loops over
//    the plane's most taps, predicated (14.7 M instructions, 21.7 us); taps fixed at
//    compile time for the usual 2 x 2 and 3 x 3 (8.3 M instructions but 64 registers,
//    half the warps resident, 18.4 us). A flat grid over the planes' tiles, to skip the
//    chroma planes' empty CTAs, took 48 registers and so fewer resident warps.
// Nothing depends on the warp or wavefront width.
#include "gpu_scale.h"

#include <numeric>
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

// The separable kernel's tile, its threads (kSeparableTileW x kSeparableThreadsY, each
// thread a column of the tile and every kSeparableThreadsY-th row), the most taps an axis
// may have and the most source rows a tile may read.
constexpr int kSeparableTileW = 32, kSeparableTileH = 16, kSeparableThreadsY = 8;
constexpr int kSeparableMaxTaps = 8;
constexpr int kSeparableMaxRows = kSeparableTileH * (kSeparableMaxTaps - 1) + 3;

// The most source samples a destination sample reads along an axis. Area: sample d
// covers [d*src, d*src + src) in units of 1/dst pixel; with f = d*src mod dst, a
// multiple of g = gcd(src, dst) below dst, it touches floor((f + src - 1) / dst) + 1
// pixels, most at f = dst - g (exactly src/dst where dst divides src).
int MaxAxisTaps(int src, int dst, ScaleFilter filter) {
  if (filter != ScaleFilter::kArea) return 2;
  return (dst - std::gcd(src, dst) + src - 1) / dst + 1;
}

// At most how many source rows `rows` consecutive destination rows read.
int MaxSpanRows(int src, int dst, int rows) {
  return static_cast<int>(static_cast<int64_t>(rows) * src / dst) + 3;
}

bool FitsSeparable(const ScalePlan& p) {
  for (int i = 0; i < p.num_planes; ++i) {
    const ScalePlaneGeom& g = p.plane[i];
    if (MaxAxisTaps(g.src_w, g.dst_w, g.filter_x) > kSeparableMaxTaps ||
        MaxAxisTaps(g.src_h, g.dst_h, g.filter_y) > kSeparableMaxTaps ||
        MaxSpanRows(g.src_h, g.dst_h, kSeparableTileH) > kSeparableMaxRows) {
      return false;
    }
  }
  return true;
}

// One axis's taps for a tile's destination indices, weights stored tap-major so that the
// threads of a warp read consecutive words.
template <int N>
struct TileTaps {
  int first[N];
  int count[N];
  int32_t weight[kSeparableMaxTaps][N];
};

template <int N>
__device__ inline void FillTileTaps(TileTaps<N>& t, int k, int src, int dst, ScaleFilter filter, int d) {
  const AxisTaps a = AxisTapsFor(src, dst, filter, d);
  t.first[k] = a.first;
  t.count[k] = a.last - a.first + 1;
  for (int i = 0; i <= a.last - a.first; ++i) t.weight[i][k] = AxisWeight(a, a.first + i, dst);
}

__global__ void __launch_bounds__(kSeparableTileW * kSeparableThreadsY)
    SeparableScaleKernel(ScalePlan p, SourcePlanes s, uint8_t* dst) {
  __shared__ TileTaps<kSeparableTileW> columns;
  __shared__ TileTaps<kSeparableTileH> rows;
  __shared__ int32_t row_sums[kSeparableMaxRows][kSeparableTileW];  // source row x tile column
  const int plane = blockIdx.z;
  const ScalePlaneGeom g = Pick(p.plane, plane);
  const int x0 = blockIdx.x * kSeparableTileW, y0 = blockIdx.y * kSeparableTileH;
  if (x0 >= g.dst_w || y0 >= g.dst_h) return;  // the whole tile is outside this plane
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tile_w = min(kSeparableTileW, g.dst_w - x0), tile_h = min(kSeparableTileH, g.dst_h - y0);
  const int thread = ty * kSeparableTileW + tx;
  if (thread < tile_w) {
    FillTileTaps(columns, thread, g.src_w, g.dst_w, g.filter_x, x0 + thread);
  } else if (thread >= kSeparableTileW && thread - kSeparableTileW < tile_h) {
    const int k = thread - kSeparableTileW;
    FillTileTaps(rows, k, g.src_h, g.dst_h, g.filter_y, y0 + k);
  }
  __syncthreads();
  const int row0 = rows.first[0];
  const int span = rows.first[tile_h - 1] + rows.count[tile_h - 1] - row0;
  const uint8_t* src = Pick(s.plane, plane);
  const size_t stride = static_cast<size_t>(Pick(s.stride, plane));
  uint8_t* out = dst + Pick(p.dst_offset, plane) + static_cast<size_t>(y0) * Pick(p.dst_row_bytes, plane) +
                 static_cast<size_t>(x0 + tx) * g.channels;
  const size_t out_stride = static_cast<size_t>(Pick(p.dst_row_bytes, plane));
  const uint64_t half = (static_cast<uint64_t>(AxisTotal(g.src_w, g.filter_x)) * AxisTotal(g.src_h, g.filter_y)) >> 1;
  for (int c = 0; c < g.channels; ++c) {
    if (tx < tile_w) {  // horizontal: every source row the tile reads, weighted across
      const int first = columns.first[tx], count = columns.count[tx];
      for (int j = ty; j < span; j += kSeparableThreadsY) {
        const uint8_t* in = src + static_cast<size_t>(row0 + j) * stride + first * g.channels + c;
        int32_t sum = 0;
        for (int i = 0; i < count; ++i) sum += columns.weight[i][tx] * in[i * g.channels];
        row_sums[j][tx] = sum;
      }
    }
    __syncthreads();
    if (tx < tile_w) {  // vertical: each destination row from its rows' sums
      for (int y = ty; y < tile_h; y += kSeparableThreadsY) {
        const int first = rows.first[y] - row0, count = rows.count[y];
        int64_t sum = 0;
        for (int j = 0; j < count; ++j) sum += static_cast<int64_t>(rows.weight[j][y]) * row_sums[first + j][tx];
        const uint64_t v = DivideByTotal(static_cast<uint64_t>(sum) + half, g.reciprocal);
        out[y * out_stride + c] = static_cast<uint8_t>(v > 255 ? 255 : v);
      }
    }
    if (c + 1 < g.channels) __syncthreads();  // the next channel's sums reuse row_sums
  }
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
  // At most 16384 / 16 CTAs across and down: inside every limit.
  const bool separable = FitsSeparable(p);
  if (separable) {
    const dim3 block(kSeparableTileW, kSeparableThreadsY, 1);
    const dim3 grid((max_width + kSeparableTileW - 1) / kSeparableTileW,
                    (max_rows + kSeparableTileH - 1) / kSeparableTileH, p.num_planes);
    hipLaunchKernelGGL(SeparableScaleKernel, grid, block, 0, stream, p, s, dst);
  } else {
    const dim3 block(kScaleTile, kScaleTile, 1);
    const dim3 grid((max_width + kScaleTile - 1) / kScaleTile, (max_rows + kScaleTile - 1) / kScaleTile,
                    p.num_planes);
    hipLaunchKernelGGL(ScaleKernel, grid, block, 0, stream, p, s, dst);
  }
  GPU_RETURN_IF_ERROR(hipGetLastError(),
                      std::string("launch ") + (separable ? "SeparableScaleKernel" : "ScaleKernel") + " (" +
                          std::to_string(p.src_width) + "x" + std::to_string(p.src_height) + " -> " + std::to_string(p.dst_width) + "x" +
                          std::to_string(p.dst_height) + " " + PixelFormatName(p.format) + ")");
  return OkStatus();
}

}  // namespace conveyor
