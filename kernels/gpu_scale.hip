// The rendition scaler's kernels, all the exact integer filters of stage_scale.h, so
// all give the CPU path's bytes.
//  - AreaScaleKernel, the usual one (area filtering on both axes, at most four source
//    samples across, 32-bit sums): a thread a destination column and a few rows, with
//    ScaleAreaStrip; one launch for all the renditions of a frame that it takes.
//  - SeparableScaleKernel, for bilinear axes and shrinks of up to about 7x: a CTA makes a
//    32 x 16 tile of one plane. It works out the tile's column and row taps once, sums
//    each source row the tile reads with the column weights into shared memory
//    (horizontal pass), then weights those sums down the columns (vertical pass).
//  - ScaleKernel, where an axis has more than kSeparableMaxTaps taps (shrinking more
//    than about 7 times): a 16 x 16 tile, a thread per pixel, ScaleSampleFromTaps per
//    sample.
// Measured on the H200 with Nsight Compute, 1080p -> 720p / 360p yuv420p:
//  - ScaleKernel: 33 us with a thread per sample, still 33 with the taps shared, and
//    20.3 / 9.6 us once the plane's entries of the parameter arrays were picked with
//    constant indices (Pick): indexing them by blockIdx.z had every thread copy the
//    arrays to local memory (5.6 M L2 sectors -> 0.43 M). 32 x 32 tiles: 18 / 12 us.
//  - SeparableScaleKernel: 15.9 / 9.2 us (10.5 M + 3.6 M warp instructions, issue-bound,
//    every warp slot filled). Tried and slower: unrolled loops over the plane's most
//    taps, predicated (21.7 us); taps fixed at compile time for the usual 2 x 2 and 3 x 3
//    (64 registers, half the warps resident, 18.4 us).
//  - AreaScaleKernel: 9.5 / 13.6 us with 8 rows a thread and a row's loads at a time
//    (4.2 M + 1.5 M instructions; 360p had too few threads to hide its loads), 9.7 / 6.8
//    with strips sized to the GPU, 12.5 us for both in one launch with four rows' loads
//    in flight (6.1 M instructions), and 11.3 us (5.3 M) with a column's taps a fixed step
//    apart, so that a row's loads share one address.
// Nothing depends on the warp or wavefront width.
#include "gpu_scale.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

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

// The most source samples a destination sample reads along an axis.
int MaxAxisTaps(int src, int dst, ScaleFilter filter) {
  return filter == ScaleFilter::kArea ? MaxAreaTaps(src, dst) : 2;
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

// The area kernel: a CTA is kAreaColumns consecutive bytes of a destination row (virtual
// columns, channels included) and `rows` rows down; each thread makes one column of it
// with ScaleAreaStrip. The grid is flat over the CTAs of up to kAreaMaxJobs planes, of
// one or several renditions of the same source (a ladder's 720p and 360p in one launch),
// so the smaller chroma planes start no empty CTAs. Strips are as short as still gives
// kAreaFillThreads threads (half the warp slots of the H200's 132 SMs), and at most
// kAreaMaxRows: a strip's rows are a thread's chain of loads.
constexpr int kAreaColumns = 128, kAreaMaxRows = 8, kAreaMaxTaps = 4, kAreaMaxJobs = 6;
constexpr int64_t kAreaFillThreads = 132 * 1024;

struct AreaPlaneJob {
  ScalePlaneGeom g;
  const uint8_t* src;
  uint8_t* dst;
  int src_stride, dst_stride;
  int columns;    // CTAs across the plane
  int first_cta;  // INT_MAX past the launch's last job
};

struct AreaLaunch {
  AreaPlaneJob job[kAreaMaxJobs];
  int rows;  // destination rows a thread makes
};

template <int K>
__global__ void __launch_bounds__(kAreaColumns) AreaScaleKernel(const CONVEYOR_GRID_CONSTANT AreaLaunch p) {
  const int b = static_cast<int>(blockIdx.x);
  int j = 0;
  for (int i = 1; i < kAreaMaxJobs; ++i) j += b >= p.job[i].first_cta ? 1 : 0;
  const AreaPlaneJob& job = p.job[j];
  const int local = b - job.first_cta;
  const int strip = local / job.columns;
  const int v = (local - strip * job.columns) * kAreaColumns + static_cast<int>(threadIdx.x);
  if (v >= job.g.dst_w * job.g.channels) return;
  const int y0 = strip * p.rows, y_end = min(y0 + p.rows, job.g.dst_h);
  const size_t out_stride = static_cast<size_t>(job.dst_stride);
  ScaleAreaStrip<K>(job.g, job.src, static_cast<size_t>(job.src_stride), v, y0, y_end, job.dst + y0 * out_stride + v,
                    out_stride);
}

// The most taps across of the plan's planes where every plane fits AreaScaleKernel, else 0.
int AreaTaps(const ScalePlan& p) {
  int taps = 1;
  for (int i = 0; i < p.num_planes; ++i) {
    if (!AreaColumnsFit<kAreaMaxTaps>(p.plane[i])) return 0;
    taps = std::max(taps, MaxAreaTaps(p.plane[i].src_w, p.plane[i].dst_w));
  }
  return taps;
}

// One launch over the planes of jobs[0..n), which fit it and hold kAreaMaxJobs planes.
void LaunchAreaScale(const ScaleJob* jobs, int n, int taps, hipStream_t stream) {
  AreaLaunch launch{};
  int planes = 0;
  int64_t samples = 0;
  for (int r = 0; r < n; ++r) {
    const ScalePlan& p = *jobs[r].plan;
    for (int i = 0; i < p.num_planes; ++i, ++planes) {
      AreaPlaneJob& job = launch.job[planes];
      job.g = p.plane[i];
      job.src = jobs[r].src.plane[i];
      job.src_stride = jobs[r].src.stride[i];
      job.dst = jobs[r].dst + p.dst_offset[i];
      job.dst_stride = p.dst_row_bytes[i];
      samples += static_cast<int64_t>(job.g.dst_w) * job.g.channels * job.g.dst_h;
    }
  }
  launch.rows = static_cast<int>(std::clamp<int64_t>(samples / kAreaFillThreads, 1, kAreaMaxRows));
  int ctas = 0;  // < 2^31: at most 6 planes of 16384^2 * 4 bytes / 128
  for (int i = 0; i < kAreaMaxJobs; ++i) {
    AreaPlaneJob& job = launch.job[i];
    if (i >= planes) {
      job.first_cta = INT_MAX;
      continue;
    }
    job.columns = (job.g.dst_w * job.g.channels + kAreaColumns - 1) / kAreaColumns;
    job.first_cta = ctas;
    ctas += job.columns * ((job.g.dst_h + launch.rows - 1) / launch.rows);
  }
  const dim3 block(kAreaColumns, 1, 1);
  const dim3 blocks(static_cast<unsigned>(ctas), 1, 1);
  if (taps <= 2) {
    hipLaunchKernelGGL(AreaScaleKernel<2>, blocks, block, 0, stream, launch);
  } else if (taps == 3) {
    hipLaunchKernelGGL(AreaScaleKernel<3>, blocks, block, 0, stream, launch);
  } else {
    hipLaunchKernelGGL(AreaScaleKernel<4>, blocks, block, 0, stream, launch);
  }
}

std::string Describe(const ScalePlan& p) {
  return std::to_string(p.src_width) + "x" + std::to_string(p.src_height) + " -> " + std::to_string(p.dst_width) +
         "x" + std::to_string(p.dst_height) + " " + PixelFormatName(p.format);
}

Status CheckJob(const ScaleJob& job) {
  const ScalePlan& p = *job.plan;
  if (job.dst == nullptr) return InvalidArgument("EnqueueScale: destination buffer is null");
  for (int i = 0; i < p.num_planes; ++i) {
    if (job.src.plane[i] == nullptr) {
      return InvalidArgument("EnqueueScale: source plane " + std::to_string(i) + " is null");
    }
    if (job.src.stride[i] < p.SrcRowBytes(i)) {
      return InvalidArgument("EnqueueScale: stride " + std::to_string(job.src.stride[i]) + " of plane " +
                             std::to_string(i) + " is shorter than a row (" + std::to_string(p.SrcRowBytes(i)) +
                             " bytes)");
    }
  }
  return OkStatus();
}

// A scale the area kernel does not take, with the separable or the per-sample kernel;
// returns the kernel's name.
const char* LaunchOtherScale(const ScalePlan& p, const SourcePlanes& s, uint8_t* dst, hipStream_t stream) {
  int max_width = 0, max_rows = 0;
  for (int i = 0; i < p.num_planes; ++i) {
    max_width = std::max(max_width, p.plane[i].dst_w);
    max_rows = std::max(max_rows, p.plane[i].dst_h);
  }
  if (FitsSeparable(p)) {  // at most 16384 / 16 CTAs across and down: inside every limit
    const dim3 block(kSeparableTileW, kSeparableThreadsY, 1);
    const dim3 grid((max_width + kSeparableTileW - 1) / kSeparableTileW,
                    (max_rows + kSeparableTileH - 1) / kSeparableTileH, p.num_planes);
    hipLaunchKernelGGL(SeparableScaleKernel, grid, block, 0, stream, p, s, dst);
    return "SeparableScaleKernel";
  }
  const dim3 block(kScaleTile, kScaleTile, 1);
  const dim3 grid((max_width + kScaleTile - 1) / kScaleTile, (max_rows + kScaleTile - 1) / kScaleTile, p.num_planes);
  hipLaunchKernelGGL(ScaleKernel, grid, block, 0, stream, p, s, dst);
  return "ScaleKernel";
}

}  // namespace

Status EnqueueScales(const ScaleJob* jobs, int n, hipStream_t stream) {
  for (int r = 0; r < n; ++r) RETURN_IF_ERROR(CheckJob(jobs[r]));
  std::vector<ScaleJob> area;  // the area kernel's jobs, launched together in order
  int area_planes = 0, area_taps = 1;
  auto flush_area = [&]() -> Status {
    if (area.empty()) return OkStatus();
    LaunchAreaScale(area.data(), static_cast<int>(area.size()), area_taps, stream);
    std::string what;
    for (const ScaleJob& job : area) what += (what.empty() ? "" : ", ") + Describe(*job.plan);
    GPU_RETURN_IF_ERROR(hipGetLastError(), "launch AreaScaleKernel (" + what + ")");
    area.clear();
    area_planes = 0;
    area_taps = 1;
    return OkStatus();
  };
  for (int r = 0; r < n; ++r) {
    const ScalePlan& p = *jobs[r].plan;
    const int taps = AreaTaps(p);
    if (taps == 0) {
      const char* kernel = LaunchOtherScale(p, jobs[r].src, jobs[r].dst, stream);
      GPU_RETURN_IF_ERROR(hipGetLastError(), std::string("launch ") + kernel + " (" + Describe(p) + ")");
      continue;
    }
    if (area_planes + p.num_planes > kAreaMaxJobs) RETURN_IF_ERROR(flush_area());
    area.push_back(jobs[r]);
    area_planes += p.num_planes;
    area_taps = std::max(area_taps, taps);
  }
  return flush_area();
}

Status EnqueueScale(const ScalePlan& plan, const SourcePlanes& src, uint8_t* dst, hipStream_t stream) {
  const ScaleJob job{&plan, src, dst};
  return EnqueueScales(&job, 1, stream);
}

}  // namespace conveyor
