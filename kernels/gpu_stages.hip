// The encoder's GPU kernels. Launch shapes make no warp-size assumption: cross-thread
// steps go through shared memory and __syncthreads, or through shuffles that read
// warpSize, so the same code is right for 32-wide NVIDIA/RDNA warps and 64-wide CDNA
// wavefronts.
#include "gpu_stages.h"

#include <algorithm>

#include "gpu_runtime.h"
#include "stage_dct.h"
#include "stage_huffman.h"

namespace conveyor {
namespace {

constexpr int kDctBlocksPerCta = 16;   // 16 blocks x 8 rows = 128 threads
// Rows of a DCT work block sit 9 words apart, blocks 72: a warp's row-pass stores (four
// blocks x eight rows, one column at a time) and its column-pass loads then fall in 32
// different banks, where rows 8 apart put four blocks on each bank.
constexpr int kDctRowStride = 9;
constexpr int kSegmentThreads = 256;   // one CTA per restart segment, two threads a block, at most
// A block is coded in two halves by two threads: DC and AC 1..31, then AC 32..63 and
// EOB. Each half has half of the block's worst-case bit buffer (it fits: a half holds
// at most 32 coefficients of at most 26 bits, or the DC and 31 of them).
constexpr int kHalfWords = kMaxWordsPerBlock / 2;
static_assert(kMaxWordsPerBlock % 2 == 0 && 32 * (16 + 10) <= kHalfWords * 32, "a half must fit its buffer");
// Shared staging of the coding kernel: the levels of the blocks being coded, then the
// segment's bitstream while assembling, when it fits (else global memory). A block's 32
// words of levels sit 33 words apart, so that threads reading different blocks hit
// different banks.
constexpr int kStageBlockWords = 33;
constexpr int kStageBlocks = kSegmentThreads / 2;
constexpr int kStageWords = kStageBlocks * kStageBlockWords;

// The item of a launch that CTA `cta` of a stage's grid works on (items' CTAs are end
// to end; a launch has at most kMaxLaunchItems, so a scan is enough).
__device__ inline int ItemOfCta(const BandLaunch& L, int cta, bool coding) {
  int i = 0;
  while (i + 1 < L.items && cta >= (coding ? L.item[i + 1].first_code_cta : L.item[i + 1].first_dct_cta)) ++i;
  return i;
}

// Eight consecutive bytes: one 8-byte load where aligned, else byte loads.
__device__ inline void Load8(const uint8_t* src, uint8_t out[8]) {
  if ((reinterpret_cast<uintptr_t>(src) & 7) == 0) {
    const uint2 v = *reinterpret_cast<const uint2*>(src);
    for (int c = 0; c < 4; ++c) {
      out[c] = static_cast<uint8_t>(v.x >> (8 * c));
      out[c + 4] = static_cast<uint8_t>(v.y >> (8 * c));
    }
    return;
  }
  for (int c = 0; c < 8; ++c) out[c] = src[c];
}

// FetchBlockRow for YUV sources whose eight samples need no edge clamping: rows of bytes
// in a few wide loads instead of a (Y, Cb, Cr) triple per sample, which kept the L1
// pipeline 80 % busy. Luma when it depends on Y alone; chroma when plan.chroma_direct
// (each chroma sample is one source chroma pair, and never depends on Y). The integers
// are LumaSample's and ChromaSample's; returns false where the general path must run.
template <LayoutKind K>
__device__ bool FetchYuvRowFast(const EncodePlan& p, const SourcePlanes& s, int comp, int x, int y, uint8_t row[8]) {
  if (K == LayoutKind::kPackedRgb) return false;
  const ColorXform& xf = p.xform;
  // Rows below the frame repeat its last row (ClampCoord), as the general path does:
  // 1080p's bottom padding rows took that path, 17 % of this kernel's samples.
  if (comp == 0) {
    if (x + 8 > p.width || xf.m[0][1] != 0 || xf.m[0][2] != 0) return false;
    y = ClampCoord(y, p.height);
    uint8_t luma[8];
    Load8(s.plane[0] + static_cast<size_t>(y) * s.stride[0] + x, luma);
    for (int c = 0; c < 8; ++c) row[c] = ClampToByte((xf.m[0][0] * luma[c] + xf.bias[0]) >> kColorFracBits);
    return true;
  }
  // With chroma_direct the chroma grids match: sample (x, y) reads source pair (x, y).
  if (!p.chroma_direct || (x + 7) * p.comp[0].h >= p.width) return false;
  if (y * p.comp[0].v >= p.height) y = (p.height - 1) >> p.layout.chroma_shift_y;  // the pair row ClampCoord reads
  uint8_t cb[8], cr[8];
  if (K == LayoutKind::kSemiPlanarYuv) {
    const uint8_t* src = s.plane[1] + static_cast<size_t>(y) * s.stride[1] + 2 * x;
    uint8_t pairs[16];
    Load8(src, pairs);
    Load8(src + 8, pairs + 8);
    for (int c = 0; c < 8; ++c) {
      cb[c] = pairs[2 * c];
      cr[c] = pairs[2 * c + 1];
    }
  } else {
    Load8(s.plane[1] + static_cast<size_t>(y) * s.stride[1] + x, cb);
    Load8(s.plane[2] + static_cast<size_t>(y) * s.stride[2] + x, cr);
  }
  for (int c = 0; c < 8; ++c) {
    row[c] = ClampToByte((xf.m[comp][1] * cb[c] + xf.m[comp][2] * cr[c] + xf.bias[comp]) >> kColorFracBits);
  }
  return true;
}

// Row `y` (of the component's padded plane) of a block, samples x .. x+7, converted
// from the source frame.
template <LayoutKind K>
__device__ void FetchBlockRow(const EncodePlan& p, const SourcePlanes& s, int comp, int x, int y, uint8_t row[8]) {
  if (FetchYuvRowFast<K>(p, s, comp, x, y, row)) return;
  // Unrolled, so that `row` stays in registers.
  if (comp == 0) {
#pragma unroll
    for (int c = 0; c < 8; ++c) row[c] = LumaSample<K>(p, s, x + c, y);
    return;
  }
#pragma unroll
  for (int c = 0; c < 8; ++c) {
    uint8_t cb, cr;
    ChromaSample<K>(p, s, x + c, y, &cb, &cr);
    row[c] = comp == 1 ? cb : cr;
  }
}

// The first kernel: stages 1 and 2 (colour conversion, DCT and quantisation) fused.
// Thread (k, r) converts row r of block k and runs its row pass, then runs column r of
// the same block. The converted samples never leave registers; the levels are staged in
// shared memory in zigzag order and leave in 16-byte stores (the CTA's blocks are
// consecutive in `levels`).
// Each CTA takes kDctBlocksPerCta blocks of one item of the launch.
template <LayoutKind K>
__global__ void ColorDctKernel(BandLaunch L) {
  __shared__ int32_t work[kDctBlocksPerCta][8 * kDctRowStride];
  __shared__ uint4 staged[kDctBlocksPerCta * 64 * sizeof(int16_t) / sizeof(uint4)];
  const BandItem& item = L.item[ItemOfCta(L, blockIdx.x, false)];
  const EncodePlan& p = L.plan[item.plan];
  const int band = item.band;
  const int cta = static_cast<int>(blockIdx.x) - item.first_dct_cta;
  const int k = threadIdx.x / 8;
  const int r = threadIdx.x % 8;
  const int block = cta * kDctBlocksPerCta + k;
  const int blocks = p.BandMcus(band) * p.blocks_per_mcu;
  const bool active = block < blocks;
  BlockOrigin o{0, 0, 0};
  if (active) {
    o = BandBlockOrigin(p, block);
    const int y0 = p.BandFirstMcuRow(band) * p.comp[o.comp].rows_per_mcu_row;
    uint8_t row[8];
    FetchBlockRow<K>(p, item.io.source, o.comp, o.x, y0 + o.y + r, row);
    FdctRow(row, &work[k][r * kDctRowStride]);
  }
  __syncthreads();
  int16_t* const levels = reinterpret_cast<int16_t*>(staged);
  if (active) {
    const EncodeTables* t = L.tables[item.plan];
    FdctColumnQuantize(work[k], r, t->quant[p.comp[o.comp].quant], t->zigzag_position, levels + k * 64, kDctRowStride);
  }
  __syncthreads();
  const int first = cta * kDctBlocksPerCta;
  const int vectors = static_cast<int>(min(kDctBlocksPerCta, blocks - first) * 64 * sizeof(int16_t) / sizeof(uint4));
  uint4* const dst = reinterpret_cast<uint4*>(item.scratch.levels + static_cast<size_t>(first) * 64);
  for (int v = threadIdx.x; v < vectors; v += blockDim.x) dst[v] = staged[v];
}

// Loads the packed Huffman tables into shared memory. Every load is issued before the
// first store, so the CTA waits for one memory round trip, not one per word (a load-store
// loop serialises them: Nsight Compute put 5 % of the coding kernel's stalls here).
__device__ void LoadHuffTables(const EncodeTables* t, PackedHuffTable* dc, PackedHuffTable* ac) {
  constexpr int kWords = static_cast<int>(2 * sizeof(PackedHuffTable) / 4);  // dc[2] or ac[2]
  constexpr int kPerThread = (kWords + 63) / 64;                              // blockDim.x >= 64
  const uint32_t* src_dc = reinterpret_cast<const uint32_t*>(&t->packed_dc[0]);
  const uint32_t* src_ac = reinterpret_cast<const uint32_t*>(&t->packed_ac[0]);
  uint32_t got_dc[kPerThread], got_ac[kPerThread];
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int i = static_cast<int>(threadIdx.x + j * blockDim.x);
    if (i < kWords) {
      got_dc[j] = src_dc[i];
      got_ac[j] = src_ac[i];
    }
  }
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int i = static_cast<int>(threadIdx.x + j * blockDim.x);
    if (i < kWords) {
      reinterpret_cast<uint32_t*>(dc)[i] = got_dc[j];
      reinterpret_cast<uint32_t*>(ac)[i] = got_ac[j];
    }
  }
}

// Stages the levels of `count` consecutive blocks (at most blockDim.x / 2 of them) in
// shared memory, kStageBlockWords apart. Each thread issues its (at most four) 16-byte
// loads before its first store: one memory round trip for the CTA. A loop that stored
// each word as it arrived was the coding kernel's largest stall (24 % of its samples).
__device__ void StageLevels(const int16_t* levels, int count, uint32_t* stage) {
  constexpr int kVectorsPerBlock = 64 * sizeof(int16_t) / sizeof(uint4);
  const uint4* src = reinterpret_cast<const uint4*>(levels);  // blocks are 128-byte aligned
  const int vectors = count * kVectorsPerBlock;                // <= 4 * blockDim.x
  uint4 got[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int v = static_cast<int>(threadIdx.x + j * blockDim.x);
    if (v < vectors) got[j] = src[v];
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int v = static_cast<int>(threadIdx.x + j * blockDim.x);
    if (v < vectors) {
      uint32_t* dst = stage + (v / kVectorsPerBlock) * kStageBlockWords + (v % kVectorsPerBlock) * 4;
      dst[0] = got[j].x;
      dst[1] = got[j].y;
      dst[2] = got[j].z;
      dst[3] = got[j].w;
    }
  }
}

// The value `v` of the thread whose index differs from this one's in bit 0: the other
// half of its block.
__device__ inline uint32_t FromPartner(uint32_t v) {
#if defined(CONVEYOR_GPU_NVIDIA)
  return __shfl_xor_sync(0xFFFFFFFFu, v, 1);
#else
  return __shfl_xor(v, 1);
#endif
}

// Codes one half of band-local block i (EncodeHalfBlock; levels staged in shared
// memory, zigzag order) into its own raw bit buffer. `low` and `high` are the block's
// nonzero masks. DC prediction needs only the previous block's DC level, which the
// colour+DCT kernel has written (and which is usually staged beside this block), so
// every half is independent.
__device__ void CodeBlockHalf(const EncodePlan& p, const BandScratchBuffers& f, int band, int i, int half,
                              const int16_t* levels, uint32_t low, uint32_t high, const uint32_t* stage,
                              int staged_first, const PackedHuffTable* dc, const PackedHuffTable* ac) {
  const int cls = p.comp[p.block_comp[i % p.blocks_per_mcu]].quant;
  const size_t unit = static_cast<size_t>(i) * 2 + half;
  WordWriter w{f.block_words + unit * kHalfWords, 0, 0, 0, 0};
  int32_t dc_diff = 0;
  if (half == 0) {
    const int prev = PreviousBlockSameComponent(p, band, i);
    int32_t last_dc = 0;
    if (prev >= staged_first) {
      last_dc = reinterpret_cast<const int16_t*>(stage + (prev - staged_first) * kStageBlockWords)[0];
    } else if (prev >= 0) {
      last_dc = f.levels[static_cast<size_t>(prev) * 64];  // an earlier round's block
    }
    dc_diff = levels[0] - last_dc;
  }
  EncodeHalfBlock(w, levels, low, high, half, dc_diff, dc[cls], ac[cls]);
  FlushWords(w);
  f.block_bits[unit] = w.total_bits;
}

// Inclusive prefix sum across the lanes of a warp (Kogge-Stone through register
// shuffles, log2(warpSize) steps, no barrier).
__device__ inline uint32_t WarpInclusiveScan(uint32_t v) {
  const int lane = static_cast<int>(threadIdx.x) % warpSize;
  for (int d = 1; d < warpSize; d *= 2) {
#if defined(CONVEYOR_GPU_NVIDIA)
    const uint32_t up = __shfl_up_sync(0xFFFFFFFFu, v, d);
#else
    const uint32_t up = __shfl_up(v, d);
#endif
    if (lane >= d) v += up;
  }
  return v;
}

// Exclusive prefix sum of one value per thread across the CTA; returns the total. Each
// warp scans its lanes, the first warp scans the warp totals (`shared` holds one per
// warp), and three barriers order it all. blockDim.x must be a multiple of warpSize and
// at most warpSize squared.
__device__ uint32_t CtaExclusiveScan(uint32_t value, uint32_t* shared, uint32_t* prefix) {
  const int lane = static_cast<int>(threadIdx.x) % warpSize;
  const int warp = static_cast<int>(threadIdx.x) / warpSize;
  const int warps = static_cast<int>(blockDim.x) / warpSize;
  const uint32_t inclusive = WarpInclusiveScan(value);
  if (lane == warpSize - 1) shared[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    const uint32_t total = WarpInclusiveScan(lane < warps ? shared[lane] : 0);
    if (lane < warps) shared[lane] = total;  // inclusive over warps
  }
  __syncthreads();
  *prefix = (warp == 0 ? 0 : shared[warp - 1]) + inclusive - value;
  const uint32_t total = shared[warps - 1];
  __syncthreads();  // `shared` is free for the next scan
  return total;
}

// A segment's size in the coding kernel's coordination buffer, once published.
constexpr uint32_t kPublished = 0x80000000u;

__device__ inline uint32_t LoadVolatile(const uint32_t* p) { return *reinterpret_cast<const volatile uint32_t*>(p); }

__device__ inline uint8_t StreamByte(const uint32_t* words, uint32_t j) {
  return static_cast<uint8_t>(words[j >> 2] >> (24 - 8 * (j & 3)));
}

// The second kernel: stages 3 and 4 (Huffman coding, bitstream packing). One CTA codes,
// assembles and places one restart segment: each thread codes blocks of the segment into
// raw bit buffers (tables in shared memory), then a prefix sum of the bit lengths places
// every block, they are ORed into place, padded with 1-bits, and a second prefix sum
// gives each byte's position after stuffing. The bytes are those EncodeSegment writes
// for the same segment.
//
// The segment's place in the band is the sum of the earlier segments' sizes. Each CTA
// publishes its size, then sums the sizes published for the segments before it and
// writes its bytes and restart marker straight into the band's output. Segments are
// numbered by a ticket taken when the CTA starts, not by blockIdx, so every segment a
// CTA waits for belongs to a CTA that is already running and never waits on a later
// one: the spin always ends. (The idea is the decoupled look-back of Merrill and
// Garland's single-pass prefix scan, as in NVIDIA's CUB; with a few hundred segments a
// band, summing every earlier size is simpler and as fast.) The last CTA to finish
// leaves the coordination buffer zeroed for the next launch. Each item of a launch has
// its own tickets and sizes.
__global__ void SegmentCodeKernel(BandLaunch L) {
  __shared__ uint32_t scan[kSegmentThreads];
  __shared__ uint32_t stage[kStageWords];
  __shared__ PackedHuffTable dc[2], ac[2];
  __shared__ int ticket;
  __shared__ bool last_to_finish;
  const BandItem& item = L.item[ItemOfCta(L, blockIdx.x, true)];
  const EncodePlan& p = L.plan[item.plan];
  const int band = item.band;
  const int segments = p.BandSegments(band);  // this item's CTAs
  const BandScratchBuffers& f = item.scratch;
  uint32_t* const published = f.coordination + 2;
  if (threadIdx.x == 0) ticket = static_cast<int>(atomicAdd(&f.coordination[0], 1u));
  LoadHuffTables(L.tables[item.plan], dc, ac);
  __syncthreads();  // tables loaded, ticket taken
  const int local = ticket;
  const int band_first = p.BandFirstMcu(band);
  const int band_end = band_first + p.BandMcus(band);
  const int segment = p.BandFirstSegment(band) + local;
  const int mcu0 = max(segment * p.segment_mcus, band_first);
  const int mcu1 = min((segment + 1) * p.segment_mcus, band_end);
  const int b0 = (mcu0 - band_first) * p.blocks_per_mcu;
  const int n = (mcu1 - mcu0) * p.blocks_per_mcu;
  // Rounds of blockDim/2 blocks, a thread per half block; each round's levels come in
  // with coalesced loads spread over the CTA, so the coding loops read shared memory.
  const int per_round = static_cast<int>(blockDim.x) / 2;
  for (int round = 0; round < n; round += per_round) {
    const int count = min(per_round, n - round);
    StageLevels(f.levels + static_cast<size_t>(b0 + round) * 64, count, stage);
    __syncthreads();
    const int k = static_cast<int>(threadIdx.x) / 2;
    const int half = static_cast<int>(threadIdx.x) % 2;
    const uint32_t* pairs = stage + k * kStageBlockWords;
    const uint32_t mine = k < count ? HalfNonzeroMask(pairs + 16 * half, half) : 0;
    const uint32_t other = FromPartner(mine);  // every lane takes part
    if (k < count) {
      CodeBlockHalf(p, f, band, b0 + round + k, half, reinterpret_cast<const int16_t*>(pairs), half ? other : mine,
                    half ? mine : other, stage, b0 + round, dc, ac);
    }
    __syncthreads();  // the stage is free again; every half's bits are in global memory
  }

  // Units are half blocks from here on: 2n of them, in bitstream order.
  const int units = 2 * n;
  const size_t u0 = static_cast<size_t>(b0) * 2;
  const int chunk = (units + blockDim.x - 1) / blockDim.x;
  const int t0 = min(units, static_cast<int>(threadIdx.x) * chunk);
  const int t1 = min(units, t0 + chunk);

  // Bit offset of this thread's first unit, and the segment's length in bits.
  uint32_t mine = 0;
  for (int k = t0; k < t1; ++k) mine += f.block_bits[u0 + k];
  uint32_t offset;
  const uint32_t total_bits = CtaExclusiveScan(mine, scan, &offset);

  const uint32_t nwords = (total_bits + 31) / 32 + 1;
  uint32_t* words = nwords <= static_cast<uint32_t>(kStageWords)
                        ? stage
                        : f.segment_words + static_cast<size_t>(local) * p.SegmentWordCapacity();
  for (uint32_t w = threadIdx.x; w < nwords; w += blockDim.x) words[w] = 0;
  __syncthreads();
  for (int k = t0; k < t1; ++k) {
    const uint32_t bits = f.block_bits[u0 + k];
    const uint32_t* src = f.block_words + (u0 + k) * kHalfWords;
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

  // Byte stuffing: each thread takes a run of bytes; a scan of their 0xFF counts places
  // its output and gives the segment's stuffed size.
  const uint32_t nbytes = (total_bits + 7) / 8;
  const uint32_t bchunk = (nbytes + blockDim.x - 1) / blockDim.x;
  const uint32_t j0 = min(nbytes, threadIdx.x * bchunk);
  const uint32_t j1 = min(nbytes, j0 + bchunk);
  uint32_t ff = 0;
  for (uint32_t j = j0; j < j1; ++j) ff += StreamByte(words, j) == 0xFF;
  uint32_t before;
  const uint32_t total_ff = CtaExclusiveScan(ff, scan, &before);
  uint8_t marker[2];
  const int m = WriteRestartMarker(p, segment, marker);
  const uint32_t size = nbytes + total_ff + m;
  if (threadIdx.x == 0) atomicExch(&published[local], kPublished | size);

  uint32_t earlier = 0;
  for (int k = threadIdx.x; k < local; k += blockDim.x) {
    uint32_t v;
    while (((v = LoadVolatile(&published[k])) & kPublished) == 0) {
    }
    earlier += v & ~kPublished;
  }
  uint32_t unused;
  const uint64_t start = CtaExclusiveScan(earlier, scan, &unused);
  const uint64_t end = start + size;
  // Never expected (the plan sizes bands for the worst case), but reported rather than
  // written past the buffer: UINT32_MAX in the band's count. Ends grow with the segment
  // number, so the last segment sees any overflow.
  const bool fits = end <= p.band_capacity;
  if (fits) {
    uint8_t* out = item.io.band_out + start;
    uint32_t pos = j0 + before;
    for (uint32_t j = j0; j < j1; ++j) {
      const uint8_t byte = StreamByte(words, j);
      out[pos++] = byte;
      if (byte == 0xFF) out[pos++] = 0x00;
    }
    if (static_cast<int>(threadIdx.x) < m) out[nbytes + total_ff + threadIdx.x] = marker[threadIdx.x];
  }
  if (threadIdx.x == 0 && local == segments - 1) {
    *item.io.band_bytes = fits ? static_cast<uint32_t>(end) : UINT32_MAX;
  }

  __syncthreads();  // this CTA has read every size it needs
  if (threadIdx.x == 0) {
    __threadfence();
    last_to_finish = atomicAdd(&f.coordination[1], 1u) == static_cast<unsigned>(segments) - 1;
  }
  __syncthreads();
  if (last_to_finish) {
    for (int k = threadIdx.x; k < segments; k += blockDim.x) published[k] = 0;
    if (threadIdx.x == 0) f.coordination[0] = f.coordination[1] = 0;
  }
}

}  // namespace

// Threads of a coding CTA: two a block of the segment, rounded up to a multiple of 64 (a
// whole number of warps or wavefronts, which the CTA scan needs), at most
// kSegmentThreads. 4:2:0 segments of 16 MCUs take 192: no idle warps, more CTAs an SM.
static int SegmentThreads(const EncodePlan& p) {
  const int want = 2 * p.segment_mcus * p.blocks_per_mcu;
  return std::min(kSegmentThreads, std::max(64, (want + 63) / 64 * 64));
}

BandScratchSizes ScratchSizes(const EncodePlan& p, int frames) {
  BandScratchSizes s = ScratchElements(p);
  s.levels *= frames * sizeof(int16_t);
  s.block_words *= frames * sizeof(uint32_t);
  s.block_bits *= frames * sizeof(uint32_t);
  s.segment_words *= frames * sizeof(uint32_t);
  s.coordination *= frames * sizeof(uint32_t);
  return s;
}

BandLaunch SingleBandLaunch(const EncodePlan& plan, const EncodeTables* tables, const SourcePlanes& source,
                            int band, uint8_t* band_out, uint32_t* band_bytes) {
  BandLaunch L{};
  L.plans = 1;
  L.plan[0] = plan;
  L.tables[0] = tables;
  L.items = 1;
  L.item[0].io = {source, band_out, band_bytes};
  L.item[0].plan = 0;
  L.item[0].band = band;
  return L;
}

Status EnqueueBandStages(BandLaunch& L, const BandScratchBuffers& scratch, hipStream_t stream) {
  if (L.plans < 1 || L.plans > kMaxLaunchPlans) {
    return InvalidArgument("a launch carries 1 to " + std::to_string(kMaxLaunchPlans) + " encodes, not " +
                           std::to_string(L.plans));
  }
  if (L.items < 1 || L.items > kMaxLaunchItems) {
    return InvalidArgument("a launch carries 1 to " + std::to_string(kMaxLaunchItems) + " bands, not " +
                           std::to_string(L.items));
  }
  const LayoutKind kind = L.plan[0].layout.kind;
  int threads = 64;
  for (int j = 0; j < L.plans; ++j) {
    if (L.plan[j].layout.kind != kind) return InvalidArgument("a launch's encodes must share a pixel layout");
    if (L.tables[j] == nullptr) return InvalidArgument("encode " + std::to_string(j) + " of a launch has no tables");
    threads = std::max(threads, SegmentThreads(L.plan[j]));
  }
  // Each item's scratch regions, end to end, and its CTAs in each grid.
  BandScratchBuffers next = scratch;
  L.dct_ctas = L.code_ctas = 0;
  for (int i = 0; i < L.items; ++i) {
    BandItem& item = L.item[i];
    if (item.plan < 0 || item.plan >= L.plans) {
      return InvalidArgument("item " + std::to_string(i) + " of a launch names encode " + std::to_string(item.plan));
    }
    const EncodePlan& p = L.plan[item.plan];
    if (item.band < 0 || item.band >= p.num_bands) {
      return InvalidArgument("item " + std::to_string(i) + " of a launch names band " + std::to_string(item.band) +
                             " of " + std::to_string(p.num_bands));
    }
    item.scratch = next;
    const BandScratchSizes n = ScratchElements(p);
    next.levels += n.levels;
    next.block_words += n.block_words;
    next.block_bits += n.block_bits;
    next.segment_words += n.segment_words;
    next.coordination += n.coordination;
    item.first_dct_cta = L.dct_ctas;
    item.first_code_cta = L.code_ctas;
    L.dct_ctas += (p.BandMcus(item.band) * p.blocks_per_mcu + kDctBlocksPerCta - 1) / kDctBlocksPerCta;
    L.code_ctas += p.BandSegments(item.band);
  }
  const std::string where = " (" + std::to_string(L.items) + " bands)";
  {
    const dim3 grid(L.dct_ctas);
    const dim3 block(kDctBlocksPerCta * 8);
    switch (kind) {
      case LayoutKind::kPlanarYuv:
        hipLaunchKernelGGL(ColorDctKernel<LayoutKind::kPlanarYuv>, grid, block, 0, stream, L);
        break;
      case LayoutKind::kSemiPlanarYuv:
        hipLaunchKernelGGL(ColorDctKernel<LayoutKind::kSemiPlanarYuv>, grid, block, 0, stream, L);
        break;
      case LayoutKind::kPackedRgb:
        hipLaunchKernelGGL(ColorDctKernel<LayoutKind::kPackedRgb>, grid, block, 0, stream, L);
        break;
    }
    GPU_RETURN_IF_ERROR(hipGetLastError(), "launch ColorDctKernel" + where);
  }
  hipLaunchKernelGGL(SegmentCodeKernel, dim3(L.code_ctas), dim3(threads), 0, stream, L);
  GPU_RETURN_IF_ERROR(hipGetLastError(), "launch SegmentCodeKernel" + where);
  return OkStatus();
}

}  // namespace conveyor
