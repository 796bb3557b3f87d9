// Band scratch sizing.
#include "gpu_band_scratch.h"

namespace conveyor {

Status BandScratch::Reserve(const EncodePlan& p, int frames, hipStream_t stream,
                            const std::function<Status()>& before_grow) {
  const BandScratchSizes s = ScratchSizes(p, frames);
  const std::pair<DeviceBuffer*, size_t> want[] = {{&levels_, s.levels},
                                                   {&block_words_, s.block_words},
                                                   {&block_bits_, s.block_bits},
                                                   {&segment_words_, s.segment_words},
                                                   {&coordination_, s.coordination}};
  bool waited = false;
  for (const auto& [buffer, size] : want) {
    if (buffer->get() != nullptr && buffer->size() >= size) continue;
    if (!waited && buffer->get() != nullptr) {
      RETURN_IF_ERROR(before_grow());
      waited = true;
    }
    RETURN_IF_ERROR(buffer->Reserve(size, "band scratch"));
    if (buffer == &coordination_) {
      // The coding kernel expects zeros and leaves zeros behind.
      GPU_RETURN_IF_ERROR(hipMemsetAsync(coordination_.get(), 0, coordination_.size(), stream),
                          "hipMemsetAsync(band scratch coordination)");
    }
  }
  return OkStatus();
}

void BandScratch::Fill(BandDeviceBuffers* b) const {
  b->levels = levels_.get<int16_t>();
  b->block_words = block_words_.get<uint32_t>();
  b->block_bits = block_bits_.get<uint32_t>();
  b->segment_words = segment_words_.get<uint32_t>();
  b->coordination = coordination_.get<uint32_t>();
}

uint64_t BandScratch::bytes() const {
  uint64_t total = 0;
  for (const DeviceBuffer* d : {&levels_, &block_words_, &block_bits_, &segment_words_, &coordination_})
    total += d->size();
  return total;
}

}  // namespace conveyor
