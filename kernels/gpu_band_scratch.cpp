// Band scratch sizing.
#include "gpu_band_scratch.h"

namespace conveyor {

Status BandScratch::Reserve(const BandScratchSizes& s, hipStream_t stream,
                            const std::function<Status()>& before_grow) {
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

bool BandScratch::Holds(const BandScratchSizes& s) const {
  return levels_.size() >= s.levels && block_words_.size() >= s.block_words && block_bits_.size() >= s.block_bits &&
         segment_words_.size() >= s.segment_words && coordination_.size() >= s.coordination;
}

BandScratchBuffers BandScratch::buffers() const {
  return {levels_.get<int16_t>(), block_words_.get<uint32_t>(), block_bits_.get<uint32_t>(),
          segment_words_.get<uint32_t>(), coordination_.get<uint32_t>()};
}

uint64_t BandScratch::bytes() const {
  uint64_t total = 0;
  for (const DeviceBuffer* d : {&levels_, &block_words_, &block_bits_, &segment_words_, &coordination_})
    total += d->size();
  return total;
}

}  // namespace conveyor
