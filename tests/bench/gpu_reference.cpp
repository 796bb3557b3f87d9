// GPU reference measurements for conveyor-bench.
#include "gpu_reference.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "encode_plan.h"
#include "gpu_band_scratch.h"
#include "gpu_runtime.h"
#include "gpu_stages.h"
#include "jfif_writer.h"

namespace conveyor::bench {
namespace {

using Clock = std::chrono::steady_clock;

StatusOr<double> TimeCopies(void* dst, const void* src, size_t bytes, int reps, hipMemcpyKind kind,
                            hipStream_t stream) {
  ASSIGN_OR_RETURN(Event start, Event::Create(true, "start"));
  ASSIGN_OR_RETURN(Event stop, Event::Create(true, "stop"));
  GPU_RETURN_IF_ERROR(hipMemcpyAsync(dst, src, bytes, kind, stream), "warm-up copy");
  GPU_RETURN_IF_ERROR(hipEventRecord(start.get(), stream), "hipEventRecord");
  for (int i = 0; i < reps; ++i) GPU_RETURN_IF_ERROR(hipMemcpyAsync(dst, src, bytes, kind, stream), "copy");
  GPU_RETURN_IF_ERROR(hipEventRecord(stop.get(), stream), "hipEventRecord");
  GPU_RETURN_IF_ERROR(hipEventSynchronize(stop.get()), "hipEventSynchronize");
  float ms = 0;
  GPU_RETURN_IF_ERROR(hipEventElapsedTime(&ms, start.get(), stop.get()), "hipEventElapsedTime");
  return ms / 1e3;
}

}  // namespace

StatusOr<CopyBandwidth> MeasureCopyBandwidth(int device, size_t bytes, int reps) {
  GPU_RETURN_IF_ERROR(hipSetDevice(device), "hipSetDevice");
  ASSIGN_OR_RETURN(Stream s, Stream::Create(0, "bandwidth"));
  ASSIGN_OR_RETURN(DeviceBuffer dev, DeviceBuffer::Allocate(bytes, "bandwidth"));
  ASSIGN_OR_RETURN(PinnedBuffer pinned, PinnedBuffer::Allocate(bytes, false, "bandwidth"));
  std::vector<uint8_t> pageable(bytes, 1);
  std::memset(pinned.get(), 1, bytes);
  CopyBandwidth bw;
  const double gb = static_cast<double>(bytes) * reps / 1e9;
  ASSIGN_OR_RETURN(double t, TimeCopies(dev.get(), pinned.get(), bytes, reps, hipMemcpyHostToDevice, s.get()));
  bw.h2d_pinned_gbs = gb / t;
  ASSIGN_OR_RETURN(t, TimeCopies(dev.get(), pageable.data(), bytes, reps, hipMemcpyHostToDevice, s.get()));
  bw.h2d_pageable_gbs = gb / t;
  ASSIGN_OR_RETURN(t, TimeCopies(pinned.get(), dev.get(), bytes, reps, hipMemcpyDeviceToHost, s.get()));
  bw.d2h_pinned_gbs = gb / t;
  ASSIGN_OR_RETURN(t, TimeCopies(pageable.data(), dev.get(), bytes, reps, hipMemcpyDeviceToHost, s.get()));
  bw.d2h_pageable_gbs = gb / t;
  return bw;
}

StatusOr<double> MeasureH2dBoundFps(int device, size_t frame_bytes, int frames) {
  GPU_RETURN_IF_ERROR(hipSetDevice(device), "hipSetDevice");
  ASSIGN_OR_RETURN(Stream s, Stream::Create(0, "h2d bound"));
  ASSIGN_OR_RETURN(DeviceBuffer dev, DeviceBuffer::Allocate(frame_bytes, "h2d bound"));
  ASSIGN_OR_RETURN(PinnedBuffer pinned, PinnedBuffer::Allocate(frame_bytes, false, "h2d bound"));
  std::memset(pinned.get(), 7, frame_bytes);
  ASSIGN_OR_RETURN(double t, TimeCopies(dev.get(), pinned.get(), frame_bytes, frames, hipMemcpyHostToDevice, s.get()));
  return frames / t;
}

StatusOr<double> MeasureRegisteredH2dFps(int device, const std::vector<uint8_t*>& frames, size_t frame_bytes,
                                         int copies) {
  GPU_RETURN_IF_ERROR(hipSetDevice(device), "hipSetDevice");
  if (frames.empty()) return InvalidArgument("no frames to copy");
  std::vector<HostRegistration> registered;
  for (uint8_t* f : frames) {
    ASSIGN_OR_RETURN(HostRegistration r, HostRegistration::Register(f, frame_bytes, "bench frame"));
    registered.push_back(std::move(r));
  }
  ASSIGN_OR_RETURN(Stream s, Stream::Create(0, "registered h2d"));
  ASSIGN_OR_RETURN(DeviceBuffer dev, DeviceBuffer::Allocate(frame_bytes, "registered h2d"));
  ASSIGN_OR_RETURN(Event start, Event::Create(true, "start"));
  ASSIGN_OR_RETURN(Event stop, Event::Create(true, "stop"));
  GPU_RETURN_IF_ERROR(hipEventRecord(start.get(), s.get()), "hipEventRecord");
  for (int i = 0; i < copies; ++i) {
    GPU_RETURN_IF_ERROR(hipMemcpyAsync(dev.get(), frames[i % frames.size()], frame_bytes, hipMemcpyHostToDevice,
                                       s.get()),
                        "H2D copy");
  }
  GPU_RETURN_IF_ERROR(hipEventRecord(stop.get(), s.get()), "hipEventRecord");
  GPU_RETURN_IF_ERROR(hipEventSynchronize(stop.get()), "hipEventSynchronize");
  float ms = 0;
  GPU_RETURN_IF_ERROR(hipEventElapsedTime(&ms, start.get(), stop.get()), "hipEventElapsedTime");
  return copies / (ms / 1e3);
}

StatusOr<double> MeasureDuplexBoundFps(int device, size_t frame_bytes, size_t output_bytes, int frames) {
  GPU_RETURN_IF_ERROR(hipSetDevice(device), "hipSetDevice");
  output_bytes = std::max<size_t>(output_bytes, 1);
  ASSIGN_OR_RETURN(Stream up, Stream::Create(0, "duplex up"));
  ASSIGN_OR_RETURN(Stream down, Stream::Create(0, "duplex down"));
  ASSIGN_OR_RETURN(DeviceBuffer dev_in, DeviceBuffer::Allocate(frame_bytes, "duplex in"));
  ASSIGN_OR_RETURN(DeviceBuffer dev_out, DeviceBuffer::Allocate(output_bytes, "duplex out"));
  ASSIGN_OR_RETURN(PinnedBuffer host_in, PinnedBuffer::Allocate(frame_bytes, false, "duplex in"));
  ASSIGN_OR_RETURN(PinnedBuffer host_out, PinnedBuffer::Allocate(output_bytes, false, "duplex out"));
  std::memset(host_in.get(), 7, frame_bytes);
  ASSIGN_OR_RETURN(Event start, Event::Create(true, "start"));
  ASSIGN_OR_RETURN(Event up_done, Event::Create(true, "up done"));
  ASSIGN_OR_RETURN(Event down_done, Event::Create(true, "down done"));
  GPU_RETURN_IF_ERROR(hipEventRecord(start.get(), up.get()), "hipEventRecord");
  GPU_RETURN_IF_ERROR(hipStreamWaitEvent(down.get(), start.get(), 0), "hipStreamWaitEvent");
  for (int i = 0; i < frames; ++i) {
    GPU_RETURN_IF_ERROR(hipMemcpyAsync(dev_in.get(), host_in.get(), frame_bytes, hipMemcpyHostToDevice, up.get()),
                        "H2D copy");
    GPU_RETURN_IF_ERROR(
        hipMemcpyAsync(host_out.get(), dev_out.get(), output_bytes, hipMemcpyDeviceToHost, down.get()), "D2H copy");
  }
  GPU_RETURN_IF_ERROR(hipEventRecord(up_done.get(), up.get()), "hipEventRecord");
  GPU_RETURN_IF_ERROR(hipEventRecord(down_done.get(), down.get()), "hipEventRecord");
  GPU_RETURN_IF_ERROR(hipEventSynchronize(up_done.get()), "hipEventSynchronize");
  GPU_RETURN_IF_ERROR(hipEventSynchronize(down_done.get()), "hipEventSynchronize");
  float up_ms = 0, down_ms = 0;
  GPU_RETURN_IF_ERROR(hipEventElapsedTime(&up_ms, start.get(), up_done.get()), "hipEventElapsedTime");
  GPU_RETURN_IF_ERROR(hipEventElapsedTime(&down_ms, start.get(), down_done.get()), "hipEventElapsedTime");
  return frames / (std::max(up_ms, down_ms) / 1e3);
}

StatusOr<std::vector<FrameTimes>> RunSerial(int device, const std::vector<const OwnedFrame*>& frames,
                                            const std::vector<EncodeParams>& params) {
  GPU_RETURN_IF_ERROR(hipSetDevice(device), "hipSetDevice");
  hipStream_t legacy = nullptr;  // the default stream, on purpose: this is the anti-pattern
  DeviceBuffer source, out, tables;
  BandScratch scratch;
  PinnedBuffer counts;
  ASSIGN_OR_RETURN(counts, PinnedBuffer::Allocate(4096 * sizeof(uint32_t), true, "counts"));
  ASSIGN_OR_RETURN(tables, DeviceBuffer::Allocate(sizeof(EncodeTables), "tables"));
  int tables_quality = -1;
  std::vector<FrameTimes> times;
  std::vector<uint8_t> pageable_out, jpeg;
  for (size_t i = 0; i < frames.size(); ++i) {
    const FrameView& f = frames[i]->view;
    FrameTimes t;
    t.submitted = t.started = Clock::now();
    ASSIGN_OR_RETURN(EncodePlan p, MakeEncodePlan(f, params[i]));
    const size_t bytes = frames[i]->bytes.size();
    RETURN_IF_ERROR(source.Reserve(bytes, "source"));
    RETURN_IF_ERROR(out.Reserve(p.band_capacity * p.num_bands, "out"));
    RETURN_IF_ERROR(scratch.Reserve(p, 1, legacy, [] { return OkStatus(); }));  // each frame ends with a full wait
    if (tables_quality != p.quality) {
      EncodeTables host;
      BuildEncodeTables(p.quality, &host);
      GPU_RETURN_IF_ERROR(hipMemcpy(tables.get(), &host, sizeof(host), hipMemcpyHostToDevice), "hipMemcpy(tables)");
      tables_quality = p.quality;
    }
    // Synchronous copy from pageable memory.
    GPU_RETURN_IF_ERROR(hipMemcpy(source.get(), frames[i]->bytes.data(), bytes, hipMemcpyHostToDevice), "hipMemcpy(upload)");
    const SourcePlanes planes = PackedSourcePlanes(source.get<uint8_t>(), f.format, f.width, f.height);
    for (int band = 0; band < p.num_bands; ++band) {
      BandLaunch launch = SingleBandLaunch(p, tables.get<EncodeTables>(), planes, band,
                                           out.get<uint8_t>() + band * p.band_capacity,
                                           counts.device_get<uint32_t>() + band);
      RETURN_IF_ERROR(EnqueueBandStages(launch, scratch.buffers(), legacy));
    }
    // Whole-frame wait, then every band back with synchronous pageable copies.
    GPU_RETURN_IF_ERROR(hipStreamSynchronize(legacy), "whole-frame wait");
    jpeg.clear();
    AppendJfifHeader(p, &jpeg);
    for (int band = 0; band < p.num_bands; ++band) {
      const uint32_t n = counts.get<uint32_t>()[band];
      pageable_out.resize(n);
      GPU_RETURN_IF_ERROR(hipMemcpy(pageable_out.data(), out.get<uint8_t>() + band * p.band_capacity, n,
                                    hipMemcpyDeviceToHost), "hipMemcpy(readback)");
      if (band == 0) t.first_byte = Clock::now();
      jpeg.insert(jpeg.end(), pageable_out.begin(), pageable_out.end());
    }
    AppendJfifTrailer(&jpeg);
    t.done = Clock::now();
    times.push_back(t);
  }
  return times;
}

}  // namespace conveyor::bench
