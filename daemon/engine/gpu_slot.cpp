// Allocation of the GPU worker's slots, lanes and streams, and its status helpers.
#include "gpu_slot.h"

#include <algorithm>

namespace conveyor {

Status GpuSlot::AllocateInput(size_t max_input) {
  const std::string name = "slot " + std::to_string(index);
  ASSIGN_OR_RETURN(input, PinnedBuffer::Allocate(max_input, false, name + " input"));
  ASSIGN_OR_RETURN(band_bytes, PinnedBuffer::Allocate(kMaxBandsPerFrame * sizeof(uint32_t), true, name + " band_bytes"));
  ASSIGN_OR_RETURN(source, DeviceBuffer::Allocate(max_input, name + " source"));
  return OkStatus();
}

Status GpuSlot::AllocateOutput(uint64_t band_buffer, uint64_t out_capacity) {
  ASSIGN_OR_RETURN(output, PinnedBuffer::Allocate(kReadbackBuffers * band_buffer, false, "slot output"));
  for (Event& e : copied) {
    ASSIGN_OR_RETURN(e, Event::Create(false, "copied"));
  }
  ASSIGN_OR_RETURN(out, DeviceBuffer::Allocate(out_capacity, "slot out"));
  return OkStatus();
}

Status GpuSlot::CreateEvents(bool stage_timing) {
  ASSIGN_OR_RETURN(uploaded, Event::Create(false, "uploaded"));
  ASSIGN_OR_RETURN(decoded, Event::Create(false, "decoded"));
  ASSIGN_OR_RETURN(ring_copied, Event::Create(false, "ring_copied"));
  if (stage_timing) {
    ASSIGN_OR_RETURN(upload_start, Event::Create(true, "upload_start"));
    ASSIGN_OR_RETURN(upload_end, Event::Create(true, "upload_end"));
    ASSIGN_OR_RETURN(encode_start, Event::Create(true, "encode_start"));
  }
  return OkStatus();
}

Status GpuSlot::ReserveBandEvents(size_t bands, bool stage_timing) {
  while (band_done.size() < bands) {
    ASSIGN_OR_RETURN(Event e, Event::Create(false, "band_done"));
    band_done.push_back(std::move(e));
    if (stage_timing) {
      ASSIGN_OR_RETURN(Event b, Event::Create(true, "band_end"));
      band_end.push_back(std::move(b));
      ASSIGN_OR_RETURN(Event c, Event::Create(true, "band_copy_start"));
      band_copy_start.push_back(std::move(c));
      ASSIGN_OR_RETURN(Event d, Event::Create(true, "band_copy_end"));
      band_copy_end.push_back(std::move(d));
    }
  }
  return OkStatus();
}

void GpuSlot::ReleaseInput() {
  if (input_released) return;
  input_released = true;
  if (request.on_input_released) request.on_input_released();
  request.owner.reset();
}

Status EncodeLane::ReserveScratch(const BandScratchSizes& bytes, std::atomic<uint64_t>* device_bytes) {
  const uint64_t before = scratch.bytes();
  RETURN_IF_ERROR(scratch.Reserve(bytes, stream.get(), [this] {
    return GpuStatus(hipStreamSynchronize(stream.get()), "hipStreamSynchronize(encode) before growing scratch");
  }));
  *device_bytes += scratch.bytes() - before;
  return OkStatus();
}

Status EncodeLane::ReserveScaled(size_t bytes, std::atomic<uint64_t>* device_bytes) {
  if (scaled.get() != nullptr && scaled.size() >= bytes) return OkStatus();
  if (scaled.get() != nullptr) {
    GPU_RETURN_IF_ERROR(hipStreamSynchronize(stream.get()), "hipStreamSynchronize(encode) before growing scaled");
  }
  *device_bytes += bytes - scaled.size();
  return scaled.Reserve(bytes, "scaled");
}

Status GpuStreams::Create(int encode_streams) {
  ASSIGN_OR_RETURN(upload, Stream::Create(0, "upload"));
  lanes.resize(std::max(1, encode_streams));
  for (EncodeLane& lane : lanes) {
    // The highest priority the device offers: priority helps compute, not copies.
    ASSIGN_OR_RETURN(lane.stream, Stream::Create(HighestStreamPriority(), "encode"));
  }
  ASSIGN_OR_RETURN(readback, Stream::Create(0, "readback"));
  return OkStatus();
}

std::vector<Stream*> GpuStreams::All() {
  std::vector<Stream*> all = {&upload, &readback};
  for (EncodeLane& lane : lanes) all.push_back(&lane.stream);
  return all;
}

int64_t Nanoseconds(SteadyTime from, SteadyTime to) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count();
}

Status Check(const std::string& what, int slot, hipError_t err) {
  return GpuStatus(err, what + " (slot " + std::to_string(slot) + ")");
}

Status Injected(const WorkerOptions& options, const std::string& what, int slot) {
  if (!options.test_fault) return OkStatus();
  return options.test_fault(what).WithContext(what + " (slot " + std::to_string(slot) + ")");
}

}  // namespace conveyor
