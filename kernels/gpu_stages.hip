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
constexpr int kSegmentThreads = 128;    // one CTA per restart segment
constexpr int kPackThreads = 128;  // one CTA per segment; a power of two for the reduction

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

// Loads the Huffman tables into shared memory, a word per thread at a time.
__device__ void LoadHuffTables(const EncodeTables* t, HuffTable* dc, HuffTable* ac) {
  const uint32_t* src = reinterpret_cast<const uint32_t*>(&t->dc[0]);
  uint32_t* dst = reinterpret_cast<uint32_t*>(dc);
  for (int i = threadIdx.x; i < static_cast<int>(2 * sizeof(HuffTable) / 4); i += blockDim.x) dst[i] = src[i];
  src = reinterpret_cast<const uint32_t*>(&t->ac[0]);
  dst = reinterpret_cast<uint32_t*>(ac);
  for (int i = threadIdx.x; i < static_cast<int>(2 * sizeof(HuffTable) / 4); i += blockDim.x) dst[i] = src[i];
}

// Codes band-local block i into its own raw bit buffer. DC prediction needs only the
// previous block's DC level, which stage 2 has already written, so every block is
// independent.
__device__ void CodeBlock(const EncodePlan& p, const BandDeviceBuffers& b, int band, int i, const HuffTable* dc,
                          const HuffTable* ac) {
  const int cls = p.comp[p.block_comp[i % p.blocks_per_mcu]].quant;
  const int prev = PreviousBlockSameComponent(p, band, i);
  int32_t last_dc = prev < 0 ? 0 : b.levels[static_cast<size_t>(prev) * 64];
  WordWriter w{b.block_words + static_cast<size_t>(i) * kMaxWordsPerBlock, 0, 0, 0, 0};
  EncodeBlock(w, b.levels + static_cast<size_t>(i) * 64, &last_dc, dc[cls], ac[cls]);
  FlushWords(w);
  b.block_bits[i] = w.total_bits;
}

// Exclusive prefix sum of one value per thread across the CTA; returns the total.
__device__ uint32_t CtaExclusiveScan(uint32_t value, uint32_t* shared, uint32_t* prefix) {
  shared[threadIdx.x] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t running = 0;
    for (unsigned t = 0; t < blockDim.x; ++t) {
      const uint32_t v = shared[t];
      shared[t] = running;
      running += v;
    }
    shared[blockDim.x] = running;
  }
  __syncthreads();
  *prefix = shared[threadIdx.x];
  const uint32_t total = shared[blockDim.x];
  __syncthreads();
  return total;
}

__device__ inline uint8_t StreamByte(const uint32_t* words, uint32_t j) {
  return static_cast<uint8_t>(words[j >> 2] >> (24 - 8 * (j & 3)));
}

// Stage 3. One CTA codes and assembles one restart segment: each thread codes blocks of
// the segment into raw bit buffers (tables in shared memory), then a prefix sum of the
// bit lengths places every block, they are ORed into place, padded with 1-bits, and the
// bytes are stuffed with a second prefix sum for the output positions. The result is the
// bytes EncodeSegment writes for the same segment.
__global__ void SegmentCodeKernel(EncodePlan p, BandDeviceBuffers b, int band) {
  __shared__ uint32_t scan[kSegmentThreads + 1];
  __shared__ HuffTable dc[2], ac[2];
  LoadHuffTables(b.tables, dc, ac);
  const int local = blockIdx.x;
  const int band_first = p.BandFirstMcu(band);
  const int band_end = band_first + p.BandMcus(band);
  const int segment = p.BandFirstSegment(band) + local;
  const int mcu0 = max(segment * p.segment_mcus, band_first);
  const int mcu1 = min((segment + 1) * p.segment_mcus, band_end);
  const int b0 = (mcu0 - band_first) * p.blocks_per_mcu;
  const int n = (mcu1 - mcu0) * p.blocks_per_mcu;
  __syncthreads();  // tables loaded
  for (int k = threadIdx.x; k < n; k += blockDim.x) CodeBlock(p, b, band, b0 + k, dc, ac);
  __syncthreads();  // every block's bits are in global memory, visible to the CTA

  const int chunk = (n + blockDim.x - 1) / blockDim.x;
  const int t0 = min(n, static_cast<int>(threadIdx.x) * chunk);
  const int t1 = min(n, t0 + chunk);

  // Bit offset of this thread's first block, and the segment's length in bits.
  uint32_t mine = 0;
  for (int k = t0; k < t1; ++k) mine += b.block_bits[b0 + k];
  uint32_t offset;
  const uint32_t total_bits = CtaExclusiveScan(mine, scan, &offset);

  uint32_t* words = b.segment_words + static_cast<size_t>(local) * p.SegmentWordCapacity();
  const uint32_t nwords = (total_bits + 31) / 32 + 1;
  for (uint32_t w = threadIdx.x; w < nwords; w += blockDim.x) words[w] = 0;
  __syncthreads();
  for (int k = t0; k < t1; ++k) {
    const uint32_t bits = b.block_bits[b0 + k];
    const uint32_t* src = b.block_words + static_cast<size_t>(b0 + k) * kMaxWordsPerBlock;
    for (uint32_t q = 0; q * 32 < bits; ++q) {
      const uint32_t pos = offset + 32 * q;
      const uint32_t shift = pos % 32;
      atomicOr(&words[pos / 32], src[q] >> shift);
      if (shift != 0) atomicOr(&words[pos / 32 + 1], src[q] << (32 - shift));
    }
    offset += bits;
  }
  __syncthreads();
  if (threadIdx.x == 0 && total_bits % 8 != 0) {
    const uint32_t pad = 8 - total_bits % 8;  // 1-bits up to the byte boundary
    words[total_bits / 32] |= ((1u << pad) - 1) << (32 - total_bits % 32 - pad);
  }
  __syncthreads();

  // Byte stuffing: each thread takes a run of bytes; a second scan places its output.
  const uint32_t nbytes = (total_bits + 7) / 8;
  const uint32_t bchunk = (nbytes + blockDim.x - 1) / blockDim.x;
  const uint32_t j0 = min(nbytes, threadIdx.x * bchunk);
  const uint32_t j1 = min(nbytes, j0 + bchunk);
  uint32_t ff = 0;
  for (uint32_t j = j0; j < j1; ++j) ff += StreamByte(words, j) == 0xFF;
  uint32_t before;
  const uint32_t total_ff = CtaExclusiveScan(ff, scan, &before);
  uint8_t* out = b.segments + static_cast<size_t>(local) * p.segment_capacity;
  uint32_t pos = j0 + before;
  for (uint32_t j = j0; j < j1; ++j) {
    const uint8_t byte = StreamByte(words, j);
    out[pos++] = byte;
    if (byte == 0xFF) out[pos++] = 0x00;
  }
  if (threadIdx.x == 0) b.segment_bytes[local] = nbytes + total_ff;
}

// Stage 4. One CTA per segment: its offset in the band is the sum of the earlier
// segments' sizes and markers (a CTA-wide reduction; a band has at most a few hundred
// segments), then its threads copy it into place. The last CTA also writes the band's
// byte count to mapped host memory, so the host can size the band's readback without
// another copy; UINT32_MAX there reports a segment that did not fit (never expected:
// the plan sizes segments for the worst case).
__global__ void PackKernel(EncodePlan p, BandDeviceBuffers b, int band) {
  __shared__ uint32_t partial[kPackThreads];
  __shared__ uint32_t overflow;
  const int s = blockIdx.x;
  const int segments = p.BandSegments(band);
  const int first = p.BandFirstSegment(band);
  if (threadIdx.x == 0) overflow = 0;
  __syncthreads();
  uint32_t sum = 0;
  for (int k = threadIdx.x; k < s; k += blockDim.x) {
    const uint32_t n = b.segment_bytes[k];
    if (n > p.segment_capacity) overflow = 1;
    uint8_t marker[2];
    sum += n + WriteRestartMarker(p, first + k, marker);
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const uint32_t offset = partial[0];
  const uint32_t n = b.segment_bytes[s];
  if (overflow != 0 || n > p.segment_capacity) {
    if (threadIdx.x == 0 && s == segments - 1) *b.band_bytes = UINT32_MAX;
    return;
  }
  const uint8_t* src = b.segments + static_cast<size_t>(s) * p.segment_capacity;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) b.band_out[offset + i] = src[i];
  uint8_t marker[2];
  const int m = WriteRestartMarker(p, first + s, marker);
  if (static_cast<int>(threadIdx.x) < m) b.band_out[offset + n + threadIdx.x] = marker[threadIdx.x];
  if (threadIdx.x == 0 && s == segments - 1) *b.band_bytes = offset + n + m;
}

}  // namespace

BandScratchSizes ScratchSizes(const EncodePlan& p) {
  BandScratchSizes s;
  const size_t blocks = p.BandBlocks();
  const size_t segments = p.MaxBandSegments();
  s.levels = blocks * 64 * sizeof(int16_t);
  s.block_words = blocks * kMaxWordsPerBlock * sizeof(uint32_t);
  s.block_bits = blocks * sizeof(uint32_t);
  s.segment_words = segments * p.SegmentWordCapacity() * sizeof(uint32_t);
  s.segments = segments * p.segment_capacity;
  s.segment_bytes = segments * sizeof(uint32_t);
  return s;
}

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
  hipLaunchKernelGGL(SegmentCodeKernel, dim3(p.BandSegments(band)), dim3(kSegmentThreads), 0, stream, p, b, band);
  GPU_RETURN_IF_ERROR(hipGetLastError(), "launch SegmentCodeKernel" + where);
  hipLaunchKernelGGL(PackKernel, dim3(p.BandSegments(band)), dim3(kPackThreads), 0, stream, p, b, band);
  GPU_RETURN_IF_ERROR(hipGetLastError(), "launch PackKernel" + where);
  return OkStatus();
}

}  // namespace conveyor
