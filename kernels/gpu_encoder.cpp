// GPU frame encoder: pinned staging, explicit non-blocking streams, an event per band and
// per-band readback sized from mapped byte counters. The worker pipeline builds
// its slot ring from the same pieces.
#include "gpu_encoder.h"

#include "gpu_band_scratch.h"
#include "gpu_runtime.h"
#include "gpu_stages.h"
#include "jfif_writer.h"

namespace conveyor {

#if defined(CONVEYOR_GPU_NVIDIA)
const char* GpuBackendName() { return "hip-nvidia"; }
#else
const char* GpuBackendName() { return "hip-amd"; }
#endif

GpuProbe ProbeGpus() {
  GpuProbe probe;
  int count = 0;
  const hipError_t err = hipGetDeviceCount(&count);
  if (err != hipSuccess) {
    probe.unavailable_reason = std::string("no usable GPU: hipGetDeviceCount returned ") +
                               hipGetErrorName(err) + " (" + hipGetErrorString(err) + ")";
    return probe;
  }
  if (count == 0) {
    probe.unavailable_reason = "no usable GPU: the runtime reports zero devices";
    return probe;
  }
  int runtime = 0, driver = 0;
  (void)hipRuntimeGetVersion(&runtime);
  (void)hipDriverGetVersion(&driver);
  for (int i = 0; i < count; ++i) {
    hipDeviceProp_t prop;
    if (hipGetDeviceProperties(&prop, i) != hipSuccess) continue;
    GpuDeviceInfo info;
    info.index = i;
    info.name = prop.name;
    info.total_memory = prop.totalGlobalMem;
    info.runtime_version = runtime;
    info.driver_version = driver;
    probe.devices.push_back(info);
  }
  if (probe.devices.empty()) probe.unavailable_reason = "no GPU answered hipGetDeviceProperties";
  return probe;
}

struct GpuJpegEncoder::Impl {
  int device = 0;
  Stream upload, encode, readback;
  Event uploaded;
  std::vector<Event> band_done;

  PinnedBuffer staging_in;   // the frame, packed, as the H2D copy's source
  PinnedBuffer staging_out;  // bitstream bands, as the D2H copies' destination
  PinnedBuffer band_bytes;   // mapped: per-band byte counts written by SegmentCodeKernel
  PinnedBuffer tables_host;  // EncodeTables for the H2D copy
  int tables_quality = -1;

  DeviceBuffer source, out, tables;
  BandScratch scratch;

  Status Reserve(const EncodePlan& p, size_t frame_bytes);
  Status Run(const FrameView& frame, const EncodePlan& p, size_t frame_bytes,
             std::vector<uint8_t>* jpeg);
};

Status GpuJpegEncoder::Impl::Reserve(const EncodePlan& p, size_t frame_bytes) {
  RETURN_IF_ERROR(staging_in.Reserve(frame_bytes, "staging_in"));
  RETURN_IF_ERROR(staging_out.Reserve(p.band_capacity * p.num_bands, "staging_out"));
  RETURN_IF_ERROR(band_bytes.Reserve(sizeof(uint32_t) * p.num_bands, "band_bytes"));
  RETURN_IF_ERROR(tables_host.Reserve(sizeof(EncodeTables), "tables_host"));
  RETURN_IF_ERROR(source.Reserve(frame_bytes, "source"));
  // Every stream is idle between Encode() calls, so growing needs no wait.
  RETURN_IF_ERROR(scratch.Reserve(p, 1, encode.get(), [] { return OkStatus(); }));
  RETURN_IF_ERROR(out.Reserve(p.band_capacity * p.num_bands, "out"));
  RETURN_IF_ERROR(tables.Reserve(sizeof(EncodeTables), "tables"));
  while (band_done.size() < static_cast<size_t>(p.num_bands)) {
    ASSIGN_OR_RETURN(Event e, Event::Create(false, "band_done"));
    band_done.push_back(std::move(e));
  }
  return OkStatus();
}

Status GpuJpegEncoder::Impl::Run(const FrameView& frame, const EncodePlan& p,
                                 size_t frame_bytes, std::vector<uint8_t>* jpeg) {
  // The previous Encode() ended with every stream idle, so staging can be rewritten.
  CopyToPackedLayout(frame, staging_in.get<uint8_t>());
  if (tables_quality != p.quality) {
    BuildEncodeTables(p.quality, tables_host.get<EncodeTables>());
    GPU_RETURN_IF_ERROR(hipMemcpyAsync(tables.get(), tables_host.get(), sizeof(EncodeTables),
                                       hipMemcpyHostToDevice, upload.get()),
                        "hipMemcpyAsync(tables, upload)");
    tables_quality = p.quality;
  }
  GPU_RETURN_IF_ERROR(hipMemcpyAsync(source.get(), staging_in.get(), frame_bytes,
                                     hipMemcpyHostToDevice, upload.get()),
                      "hipMemcpyAsync(frame, upload)");
  GPU_RETURN_IF_ERROR(hipEventRecord(uploaded.get(), upload.get()), "hipEventRecord(uploaded)");
  GPU_RETURN_IF_ERROR(hipStreamWaitEvent(encode.get(), uploaded.get(), 0),
                      "hipStreamWaitEvent(encode, uploaded)");

  const SourcePlanes planes = PackedSourcePlanes(source.get<uint8_t>(), frame.format, frame.width, frame.height);
  for (int band = 0; band < p.num_bands; ++band) {
    BandLaunch launch = SingleBandLaunch(p, tables.get<EncodeTables>(), planes, band,
                                         out.get<uint8_t>() + band * p.band_capacity,
                                         band_bytes.device_get<uint32_t>() + band);
    RETURN_IF_ERROR(EnqueueBandStages(launch, scratch.buffers(), encode.get()));
    GPU_RETURN_IF_ERROR(hipEventRecord(band_done[band].get(), encode.get()),
                        "hipEventRecord(band_done " + std::to_string(band) + ")");
  }

  // Read each band back as soon as its event fires; its size comes from mapped memory.
  size_t offset = 0;
  const volatile uint32_t* counts = band_bytes.get<uint32_t>();
  for (int band = 0; band < p.num_bands; ++band) {
    GPU_RETURN_IF_ERROR(hipEventSynchronize(band_done[band].get()),
                        "encode of band " + std::to_string(band));
    const uint32_t n = counts[band];
    if (n > p.band_capacity) {
      return Internal("band " + std::to_string(band) + " overflowed its bitstream buffer");
    }
    GPU_RETURN_IF_ERROR(hipMemcpyAsync(staging_out.get<uint8_t>() + offset,
                                       out.get<uint8_t>() + band * p.band_capacity, n,
                                       hipMemcpyDeviceToHost, readback.get()),
                        "hipMemcpyAsync(band " + std::to_string(band) + ", readback)");
    offset += n;
  }
  GPU_RETURN_IF_ERROR(hipStreamSynchronize(readback.get()), "readback");

  jpeg->clear();
  jpeg->reserve(offset + 1024);
  AppendJfifHeader(p, jpeg);
  jpeg->insert(jpeg->end(), staging_out.get<uint8_t>(), staging_out.get<uint8_t>() + offset);
  AppendJfifTrailer(jpeg);
  return OkStatus();
}

GpuJpegEncoder::GpuJpegEncoder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuJpegEncoder::~GpuJpegEncoder() {
  if (impl_ && impl_->encode.get() != nullptr) {
    (void)hipSetDevice(impl_->device);
    // Work may still be queued after a failed Encode(); let it finish before the buffers go.
    (void)hipStreamSynchronize(impl_->upload.get());
    (void)hipStreamSynchronize(impl_->encode.get());
    (void)hipStreamSynchronize(impl_->readback.get());
  }
}

StatusOr<std::unique_ptr<GpuJpegEncoder>> GpuJpegEncoder::Create(int device) {
  auto impl = std::make_unique<Impl>();
  impl->device = device;
  GPU_RETURN_IF_ERROR(hipSetDevice(device), "hipSetDevice(" + std::to_string(device) + ")");
  ASSIGN_OR_RETURN(impl->upload, Stream::Create(0, "upload"));
  ASSIGN_OR_RETURN(impl->encode, Stream::Create(HighestStreamPriority(), "encode"));
  ASSIGN_OR_RETURN(impl->readback, Stream::Create(0, "readback"));
  ASSIGN_OR_RETURN(impl->uploaded, Event::Create(false, "uploaded"));
  ASSIGN_OR_RETURN(impl->band_bytes, PinnedBuffer::Allocate(sizeof(uint32_t), true, "band_bytes"));
  return std::unique_ptr<GpuJpegEncoder>(new GpuJpegEncoder(std::move(impl)));
}

StatusOr<std::vector<uint8_t>> GpuJpegEncoder::Encode(const FrameView& frame,
                                                      const EncodeParams& params,
                                                      int band_rows_hint, int first_band_rows_hint) {
  ASSIGN_OR_RETURN(EncodePlan plan, MakeEncodePlan(frame, params, band_rows_hint, first_band_rows_hint));
  GPU_RETURN_IF_ERROR(hipSetDevice(impl_->device), "hipSetDevice");
  const size_t frame_bytes = PackedFrameSize(frame.format, frame.width, frame.height);
  RETURN_IF_ERROR(impl_->Reserve(plan, frame_bytes));
  std::vector<uint8_t> jpeg;
  Status s = impl_->Run(frame, plan, frame_bytes, &jpeg);
  if (!s.ok()) {
    // Leave no copy or kernel in flight against buffers a later call may replace.
    (void)hipStreamSynchronize(impl_->upload.get());
    (void)hipStreamSynchronize(impl_->encode.get());
    (void)hipStreamSynchronize(impl_->readback.get());
    impl_->tables_quality = -1;
    return s.WithContext("gpu encode");
  }
  return jpeg;
}

}  // namespace conveyor
