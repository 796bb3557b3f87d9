// Stage 2 on x86 CPUs with AVX2 or AVX-512: the forward DCT and quantisation of
// stage_dct.h in 16-bit lanes, the products formed in pairs by one multiply-add
// (vpmaddwd), as libjpeg-turbo's SIMD "islow" DCT arranges them. The sums are regrouped
// but never rounded differently, so every level equals FdctRow/FdctColumnQuantize's
// (unit.Dct.*). The same stage also gives each block's mask of nonzero AC levels, which
// the Huffman coder would otherwise build again.
//
// Only plain data crosses this header: the ISA translation units are compiled for their
// instruction sets, and sharing an inline function or template with them would let the
// linker pick an AVX-512 copy for code that runs anywhere.
#pragma once

#include <cstdint>

namespace conveyor {

// The rows of a block's coefficients in the order the SIMD code holds them: two rows a
// 256-bit register, [0|4] [2|6] [7|1] [5|3], as the butterflies leave them.
constexpr int kX86HeldRows[8] = {0, 4, 2, 6, 7, 1, 5, 3};

// A quantisation table laid out for the SIMD code (held order), with the zigzag
// permutation from held order.
struct alignas(64) X86QuantTable {
  int32_t multiplier[64];
  int16_t half[64];
  uint16_t zigzag_source[64];  // zigzag position k -> held position of its coefficient
};

// One MCU row of a band: the blocks of `mcus` MCUs in scan order.
struct X86DctRow {
  int mcus = 0;
  int blocks_per_mcu = 0;
  const uint8_t* first[6] = {};  // block j of the first MCU: its top-left sample
  int stride[6] = {};            // bytes between its rows
  int mcu_step[6] = {};          // bytes from block j of one MCU to block j of the next
  const X86QuantTable* quant[6] = {};
  int16_t* levels = nullptr;     // 64 a block, zigzag order
  uint64_t* nonzero = nullptr;   // a block: bit k set when zigzag level k != 0 (k >= 1)
};

void DctRowAvx2(const X86DctRow& row);
void DctRowAvx512(const X86DctRow& row);

}  // namespace conveyor
