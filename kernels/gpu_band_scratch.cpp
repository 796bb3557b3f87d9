// Band scratch sizing.
#include "gpu_band_scratch.h"

namespace conveyor {

Status BandScratch::Reserve(const EncodePlan& p, const std::function<Status()>& before_grow) {
  const BandScratchSizes s = ScratchSizes(p);
  const std::pair<DeviceBuffer*, size_t> want[] = {
      {&planes_[0], p.BandPlaneSize(0)}, {&planes_[1], p.BandPlaneSize(1)}, {&planes_[2], p.BandPlaneSize(2)},
      {&levels_, s.levels},               {&block_words_, s.block_words},   {&block_bits_, s.block_bits},
      {&segment_words_, s.segment_words}, {&segments_, s.segments},         {&segment_bytes_, s.segment_bytes}};
  bool waited = false;
  for (const auto& [buffer, size] : want) {
    if (buffer->get() != nullptr && buffer->size() >= size) continue;
    if (!waited && buffer->get() != nullptr) {
      RETURN_IF_ERROR(before_grow());
      waited = true;
    }
    RETURN_IF_ERROR(buffer->Reserve(size, "band scratch"));
  }
  return OkStatus();
}

void BandScratch::Fill(BandDeviceBuffers* b) const {
  for (int c = 0; c < 3; ++c) b->planes[c] = planes_[c].get<uint8_t>();
  b->levels = levels_.get<int16_t>();
  b->block_words = block_words_.get<uint32_t>();
  b->block_bits = block_bits_.get<uint32_t>();
  b->segment_words = segment_words_.get<uint32_t>();
  b->segments = segments_.get<uint8_t>();
  b->segment_bytes = segment_bytes_.get<uint32_t>();
}

uint64_t BandScratch::bytes() const {
  uint64_t total = 0;
  for (const DeviceBuffer* d : {&planes_[0], &planes_[1], &planes_[2], &levels_, &block_words_, &block_bits_,
                                &segment_words_, &segments_, &segment_bytes_})
    total += d->size();
  return total;
}

}  // namespace conveyor
