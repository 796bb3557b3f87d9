// The encoder's GPU kernels. Launch shapes make no warp-size assumption: every
// cross-thread step goes through shared memory and __syncthreads, so the same code is
// right for 32-wide NVIDIA/RDNA warps and 64-wide CDNA wavefronts.
#include "gpu_stages.h"

#include "gpu_runtime.h"
#include "stage_dct.h"
#include "stage_huffman.h"

namespace conveyor {
namespace {

constexpr int kColorTile = 16;       // 16x16 threads, one per output sample
constexpr int kDctBlocksPerCta = 8;  // 8 blocks x 8 rows = 64 threads
constexpr int kHuffmanThreads = 64;  // one thread per segment
constexpr int kPackThreads = 256;

// Stage 1. z = 0 fills the luma plane, z = 1 both chroma planes.
template <LayoutKind K>
__global__ void ColorKernel(EncodePlan p, BandDeviceBuffers b, int band) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (blockIdx.z == 0) {
    const int rows = p.BandMcuRows(band) * p.comp[0].rows_per_mcu_row;
    if (x >= p.comp[0].plane_w || y >= rows) return;
    const int y0 = p.BandFirstMcuRow(band) * p.comp[0].rows_per_mcu_row;
    b.planes[0][static_cast<size_t>(y) * p.comp[0].plane_w + x] = LumaSample<K>(p, b.source, x, y0 + y);
  } else {
    const int rows = p.BandMcuRows(band) * p.comp[1].rows_per_mcu_row;
    if (x >= p.comp[1].plane_w || y >= rows) return;
    const int y0 = p.BandFirstMcuRow(band) * p.comp[1].rows_per_mcu_row;
    const size_t off = static_cast<size_t>(y) * p.comp[1].plane_w + x;
    ChromaSample<K>(p, b.source, x, y0 + y, &b.planes[1][off], &b.planes[2][off]);
  }
}

// Stage 2. Thread (r, k) does row r of block k, then column r of the same block.
__global__ void DctKernel(EncodePlan p, BandDeviceBuffers b, int band) {
  __shared__ int32_t work[kDctBlocksPerCta][64];
  const int k = threadIdx.x / 8;
  const int r = threadIdx.x % 8;
  const int block = blockIdx.x * kDctBlocksPerCta + k;
  const int blocks = p.BandMcus(band) * p.blocks_per_mcu;
  const bool active = block < blocks;
  BlockOrigin o{0, 0, 0};
  if (active) {
    o = BandBlockOrigin(p, block);
    const int w = p.comp[o.comp].plane_w;
    FdctRow(b.planes[o.comp] + static_cast<size_t>(o.y + r) * w + o.x, &work[k][r * 8]);
  }
  __syncthreads();
  if (active) {
    const QuantTable& q = b.tables->quant[p.comp[o.comp].quant];
    FdctColumnQuantize(work[k], r, q, b.tables->zigzag_position, b.levels + static_cast<size_t>(block) * 64);
  }
}

// Stage 3. One thread codes one restart segment.
__global__ void HuffmanKernel(EncodePlan p, BandDeviceBuffers b, int band) {
  const int local = blockIdx.x * blockDim.x + threadIdx.x;
  if (local >= p.BandSegments(band)) return;
  const int segment = p.BandFirstSegment(band) + local;
  uint8_t* out = b.segments + static_cast<size_t>(local) * p.segment_capacity;
  b.segment_bytes[local] =
      EncodeSegment(p, *b.tables, b.levels, band, segment, out, p.segment_capacity);
}

// Stage 4. One CTA packs the band: every thread walks the segment lengths (a band has
// at most a few hundred segments) and copies its share of each segment's bytes. The byte
// count goes to mapped host memory so the host can size the band's readback without
// another copy; UINT32_MAX there reports a segment that did not fit (never expected: the
// plan sizes segments for the worst case).
__global__ void PackKernel(EncodePlan p, BandDeviceBuffers b, int band) {
  const int segments = p.BandSegments(band);
  const int first = p.BandFirstSegment(band);
  uint32_t offset = 0;
  for (int s = 0; s < segments; ++s) {
    const uint32_t n = b.segment_bytes[s];
    if (n > p.segment_capacity) {
      if (threadIdx.x == 0) *b.band_bytes = UINT32_MAX;
      return;
    }
    const uint8_t* src = b.segments + static_cast<size_t>(s) * p.segment_capacity;
    for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) b.band_out[offset + i] = src[i];
    offset += n;
    uint8_t marker[2];
    const int m = WriteRestartMarker(p, first + s, marker);
    if (threadIdx.x < m) b.band_out[offset + threadIdx.x] = marker[threadIdx.x];
    offset += m;
  }
  if (threadIdx.x == 0) *b.band_bytes = offset;
}

}  // namespace

Status EnqueueBandStages(const EncodePlan& p, const BandDeviceBuffers& b, int band,
                         hipStream_t stream) {
  const std::string where = " (band " + std::to_string(band) + ")";
  {
    const int rows = p.BandMcuRows(band) * p.comp[0].rows_per_mcu_row;
    const dim3 block(kColorTile, kColorTile, 1);
    const dim3 grid((p.comp[0].plane_w + kColorTile - 1) / kColorTile,
                    (rows + kColorTile - 1) / kColorTile, 2);
    switch (p.layout.kind) {
      case LayoutKind::kPlanarYuv:
        hipLaunchKernelGGL(ColorKernel<LayoutKind::kPlanarYuv>, grid, block, 0, stream, p, b, band);
        break;
      case LayoutKind::kSemiPlanarYuv:
        hipLaunchKernelGGL(ColorKernel<LayoutKind::kSemiPlanarYuv>, grid, block, 0, stream, p, b, band);
        break;
      case LayoutKind::kPackedRgb:
        hipLaunchKernelGGL(ColorKernel<LayoutKind::kPackedRgb>, grid, block, 0, stream, p, b, band);
        break;
    }
    GPU_RETURN_IF_ERROR(hipGetLastError(), "launch ColorKernel" + where);
  }
  {
    const int blocks = p.BandMcus(band) * p.blocks_per_mcu;
    const dim3 grid((blocks + kDctBlocksPerCta - 1) / kDctBlocksPerCta);
    hipLaunchKernelGGL(DctKernel, grid, dim3(kDctBlocksPerCta * 8), 0, stream, p, b, band);
    GPU_RETURN_IF_ERROR(hipGetLastError(), "launch DctKernel" + where);
  }
  {
    const int segments = p.BandSegments(band);
    const dim3 grid((segments + kHuffmanThreads - 1) / kHuffmanThreads);
    hipLaunchKernelGGL(HuffmanKernel, grid, dim3(kHuffmanThreads), 0, stream, p, b, band);
    GPU_RETURN_IF_ERROR(hipGetLastError(), "launch HuffmanKernel" + where);
  }
  hipLaunchKernelGGL(PackKernel, dim3(1), dim3(kPackThreads), 0, stream, p, b, band);
  GPU_RETURN_IF_ERROR(hipGetLastError(), "launch PackKernel" + where);
  return OkStatus();
}

}  // namespace conveyor
