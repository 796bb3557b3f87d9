// The checks that talk to the GPU runtime (HIP on AMD, CUDA through hip_compat.h):
// enumerate devices, round-trip a pattern through hipMemcpy, run a kernel and compare its
// result, measure whether an async copy overlaps a kernel on two non-blocking streams,
// and measure pinned against pageable bandwidth. Every handle has an RAII owner from
// gpu_runtime.h; every failure is a Status with the call named.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "busy_kernel.h"
#include "gpu_checks.h"
#include "gpu_encoder.h"  // GpuBackendName
#include "gpu_runtime.h"
#include "host_access.h"

#ifndef CONVEYOR_DOCTOR_GPU_ARCHS
#define CONVEYOR_DOCTOR_GPU_ARCHS "unknown"
#endif

namespace conveyor::doctor {

namespace {

#if defined(CONVEYOR_GPU_NVIDIA)
constexpr const char* kCountCall = "cudaGetDeviceCount";
#else
constexpr const char* kCountCall = "hipGetDeviceCount";
#endif

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

CheckResult Fail(const std::string& name, const Status& s) {
  return CheckResult{name, Verdict::kFail, s.ToString(), {}};
}

CheckResult Skip(const std::string& name, const std::string& why) {
  return CheckResult{name, Verdict::kSkip, why, {}};
}

// "name (description)", or just the name where the runtime's description is the name
// again (HIP 5.2 does that for hipErrorNoDevice).
std::string ErrorText(hipError_t err) {
  const std::string name = hipGetErrorName(err), text = hipGetErrorString(err);
  return text.empty() || text == name ? name : name + " (" + text + ")";
}

std::string ArchOf(const hipDeviceProp_t& p) {
#if defined(CONVEYOR_GPU_NVIDIA)
  return "sm_" + std::to_string(p.major) + std::to_string(p.minor) + " (compute capability " +
         std::to_string(p.major) + "." + std::to_string(p.minor) + ")";
#else
  return std::string(p.gcnArchName);
#endif
}

std::string UnitsOf(const hipDeviceProp_t& p) {
#if defined(CONVEYOR_GPU_NVIDIA)
  return std::to_string(p.multiProcessorCount) + " SMs";
#else
  return std::to_string(p.multiProcessorCount) + " CUs";
#endif
}

std::string Versions(int runtime, int driver) {
#if defined(CONVEYOR_GPU_NVIDIA)
  return "CUDA runtime " + FormatCudaVersion(runtime) + " (static), " +
         (driver > 0 ? "driver supports CUDA " + FormatCudaVersion(driver) : std::string("no driver"));
#else
  return "HIP runtime " + FormatHipVersion(runtime) + ", " +
         (driver > 0 ? "driver " + FormatHipVersion(driver) : std::string("no driver"));
#endif
}

// Elapsed milliseconds between two recorded, completed timing events.
StatusOr<float> Elapsed(const Event& a, const Event& b, const std::string& what) {
  GPU_RETURN_IF_ERROR(hipEventSynchronize(b.get()), "hipEventSynchronize(" + what + ")");
  float ms = 0;
  GPU_RETURN_IF_ERROR(hipEventElapsedTime(&ms, a.get(), b.get()), "hipEventElapsedTime(" + what + ")");
  return ms;
}

// Pattern round trip through device memory with the synchronous hipMemcpy.
CheckResult SyncCopyCheck(size_t bytes) {
  const std::string name = "sync copy";
  std::vector<uint32_t> sent(bytes / 4), back(bytes / 4, 0);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<uint32_t>(i * 2654435761u) ^ 0xA5A5A5A5u;
  auto dev = DeviceBuffer::Allocate(bytes, "sync copy");
  if (!dev.ok()) return Fail(name, dev.status());
  const auto t0 = Clock::now();
  Status s = GpuStatus(hipMemcpy(dev->get(), sent.data(), bytes, hipMemcpyHostToDevice), "hipMemcpy(H2D, sync copy)");
  if (s.ok()) s = GpuStatus(hipMemcpy(back.data(), dev->get(), bytes, hipMemcpyDeviceToHost), "hipMemcpy(D2H, sync copy)");
  const double ms = MsSince(t0);
  if (!s.ok()) return Fail(name, s);
  const auto diff = std::mismatch(sent.begin(), sent.end(), back.begin());
  if (diff.first != sent.end()) {
    const size_t word = static_cast<size_t>(diff.first - sent.begin());
    char buf[160];
    std::snprintf(buf, sizeof(buf), "round trip of %s differs at byte %zu: wrote 0x%08x, read 0x%08x",
                  FormatBytes(static_cast<double>(bytes)).c_str(), word * 4, *diff.first, *diff.second);
    return CheckResult{name, Verdict::kFail, buf, {}};
  }
  return CheckResult{name, Verdict::kOk,
                     "hipMemcpy H2D + D2H round trip of " + FormatBytes(static_cast<double>(bytes)) +
                         " matches byte for byte (" + FormatFixed(ms, 2) + " ms)",
                     {{"sync_copy_ms", ms}}};
}

// What the overlap and kernel checks share: two non-blocking streams, timing events,
// pinned source and device destination, and the busy kernel's output.
struct OverlapRig {
  Stream kernel_stream, copy_stream;
  Event start, copy_done, end, k0, k1;
  PinnedBuffer pinned;
  DeviceBuffer dst, busy_out;

  static StatusOr<OverlapRig> Create(size_t bytes) {
    OverlapRig r;
    ASSIGN_OR_RETURN(r.kernel_stream, Stream::Create(0, "doctor kernel stream"));
    ASSIGN_OR_RETURN(r.copy_stream, Stream::Create(0, "doctor copy stream"));
    ASSIGN_OR_RETURN(r.start, Event::Create(true, "overlap start"));
    ASSIGN_OR_RETURN(r.copy_done, Event::Create(true, "overlap copy done"));
    ASSIGN_OR_RETURN(r.end, Event::Create(true, "overlap end"));
    ASSIGN_OR_RETURN(r.k0, Event::Create(true, "kernel start"));
    ASSIGN_OR_RETURN(r.k1, Event::Create(true, "kernel end"));
    ASSIGN_OR_RETURN(r.pinned, PinnedBuffer::Allocate(bytes, false, "overlap source"));
    std::memset(r.pinned.get(), 0x5A, bytes);
    ASSIGN_OR_RETURN(r.dst, DeviceBuffer::Allocate(bytes, "overlap destination"));
    ASSIGN_OR_RETURN(r.busy_out, DeviceBuffer::Allocate(kBusyThreads * sizeof(uint32_t), "busy kernel output"));
    return r;
  }

  StatusOr<float> TimeKernel(uint32_t iterations) {
    GPU_RETURN_IF_ERROR(hipEventRecord(k0.get(), kernel_stream.get()), "hipEventRecord(kernel start)");
    GPU_RETURN_IF_ERROR(LaunchBusyKernel(kernel_stream.get(), busy_out.get<uint32_t>(), iterations),
                        "launch busy kernel (" + std::to_string(iterations) + " steps)");
    GPU_RETURN_IF_ERROR(hipEventRecord(k1.get(), kernel_stream.get()), "hipEventRecord(kernel end)");
    return Elapsed(k0, k1, "busy kernel");
  }

  StatusOr<float> TimeCopy(size_t bytes) {
    GPU_RETURN_IF_ERROR(hipEventRecord(start.get(), copy_stream.get()), "hipEventRecord(copy start)");
    GPU_RETURN_IF_ERROR(hipMemcpyAsync(dst.get(), pinned.get(), bytes, hipMemcpyHostToDevice, copy_stream.get()),
                        "hipMemcpyAsync(H2D, overlap copy alone)");
    GPU_RETURN_IF_ERROR(hipEventRecord(copy_done.get(), copy_stream.get()), "hipEventRecord(copy done)");
    return Elapsed(start, copy_done, "copy alone");
  }

  // The kernel on one stream and the copy on the other, both released by `start`; `end`
  // follows both.
  StatusOr<float> TimeTogether(uint32_t iterations, size_t bytes) {
    GPU_RETURN_IF_ERROR(hipEventRecord(start.get(), kernel_stream.get()), "hipEventRecord(together start)");
    GPU_RETURN_IF_ERROR(hipStreamWaitEvent(copy_stream.get(), start.get(), 0), "hipStreamWaitEvent(copy on start)");
    GPU_RETURN_IF_ERROR(LaunchBusyKernel(kernel_stream.get(), busy_out.get<uint32_t>(), iterations),
                        "launch busy kernel (together)");
    GPU_RETURN_IF_ERROR(hipMemcpyAsync(dst.get(), pinned.get(), bytes, hipMemcpyHostToDevice, copy_stream.get()),
                        "hipMemcpyAsync(H2D, overlap copy together)");
    GPU_RETURN_IF_ERROR(hipEventRecord(copy_done.get(), copy_stream.get()), "hipEventRecord(together copy done)");
    GPU_RETURN_IF_ERROR(hipStreamWaitEvent(kernel_stream.get(), copy_done.get(), 0),
                        "hipStreamWaitEvent(end on copy)");
    GPU_RETURN_IF_ERROR(hipEventRecord(end.get(), kernel_stream.get()), "hipEventRecord(together end)");
    return Elapsed(start, end, "together");
  }
};

// Runs the busy kernel once and compares its output with the host's arithmetic: proves
// this binary carries code the device can run.
CheckResult KernelCheck(OverlapRig& rig) {
  const std::string name = "kernel";
  constexpr uint32_t kIters = 1000;
  auto ms = rig.TimeKernel(kIters);
  if (!ms.ok()) {
    return CheckResult{name, Verdict::kFail,
                       ms.status().ToString() + " (this binary's kernels are built for " CONVEYOR_DOCTOR_GPU_ARCHS ")",
                       {}};
  }
  std::vector<uint32_t> got(kBusyThreads);
  const Status s = GpuStatus(hipMemcpy(got.data(), rig.busy_out.get(), got.size() * sizeof(uint32_t),
                                       hipMemcpyDeviceToHost),
                             "hipMemcpy(D2H, busy kernel output)");
  if (!s.ok()) return Fail(name, s);
  for (uint32_t t = 0; t < kBusyThreads; ++t) {
    if (got[t] != BusyKernelReference(t, kIters)) {
      return CheckResult{name, Verdict::kFail,
                         "busy kernel result wrong at thread " + std::to_string(t) + " (device computes garbage)", {}};
    }
  }
  return CheckResult{name, Verdict::kOk,
                     "busy kernel ran and matches the host (built for " CONVEYOR_DOCTOR_GPU_ARCHS ")", {}};
}

struct OverlapTimes {
  double copy_ms = 0, kernel_ms = 0, together_ms = 0;
};

StatusOr<OverlapTimes> MeasureOverlap(OverlapRig& rig, size_t bytes, int reps) {
  // Warm both paths, then size the kernel to last as long as the copy (at least 2 ms) so
  // that perfect overlap halves the serial time.
  RETURN_IF_ERROR(rig.TimeCopy(bytes).status());
  constexpr uint32_t kProbeIters = 1u << 18;
  RETURN_IF_ERROR(rig.TimeKernel(kProbeIters).status());
  ASSIGN_OR_RETURN(const float probe_ms, rig.TimeKernel(kProbeIters));
  OverlapTimes t;
  t.copy_ms = 1e30;
  for (int i = 0; i < reps; ++i) {
    ASSIGN_OR_RETURN(const float ms, rig.TimeCopy(bytes));
    t.copy_ms = std::min(t.copy_ms, static_cast<double>(ms));
  }
  const double target_ms = std::clamp(t.copy_ms, 2.0, 200.0);
  const double per_iter = std::max(static_cast<double>(probe_ms), 1e-3) / kProbeIters;
  const auto iters = static_cast<uint32_t>(std::clamp(target_ms / per_iter, 1000.0, 2.0e9));
  t.kernel_ms = t.together_ms = 1e30;
  for (int i = 0; i < reps; ++i) {
    ASSIGN_OR_RETURN(const float k, rig.TimeKernel(iters));
    t.kernel_ms = std::min(t.kernel_ms, static_cast<double>(k));
    ASSIGN_OR_RETURN(const float both, rig.TimeTogether(iters, bytes));
    t.together_ms = std::min(t.together_ms, static_cast<double>(both));
  }
  return t;
}

struct Bandwidth {
  double h2d_pinned = 0, h2d_pageable = 0, d2h_pinned = 0, d2h_pageable = 0;  // GB/s
};

// Best-of-`reps` GB/s of synchronous hipMemcpy, after one warm-up copy.
StatusOr<double> BestGbps(void* dst, const void* src, size_t bytes, hipMemcpyKind kind, int reps,
                          const std::string& what) {
  GPU_RETURN_IF_ERROR(hipMemcpy(dst, src, bytes, kind), "hipMemcpy(" + what + ", warm-up)");
  double best_ms = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    GPU_RETURN_IF_ERROR(hipMemcpy(dst, src, bytes, kind), "hipMemcpy(" + what + ")");
    best_ms = std::min(best_ms, MsSince(t0));
  }
  return static_cast<double>(bytes) / (best_ms * 1e-3) / 1e9;
}

StatusOr<Bandwidth> MeasureBandwidth(size_t bytes, int reps) {
  ASSIGN_OR_RETURN(PinnedBuffer pinned, PinnedBuffer::Allocate(bytes, false, "bandwidth pinned"));
  ASSIGN_OR_RETURN(DeviceBuffer dev, DeviceBuffer::Allocate(bytes, "bandwidth device"));
  std::vector<uint8_t> pageable(bytes, 0x3C);  // written, so every page is resident
  std::memset(pinned.get(), 0x3C, bytes);
  Bandwidth b;
  ASSIGN_OR_RETURN(b.h2d_pinned, BestGbps(dev.get(), pinned.get(), bytes, hipMemcpyHostToDevice, reps, "H2D pinned"));
  ASSIGN_OR_RETURN(b.h2d_pageable,
                   BestGbps(dev.get(), pageable.data(), bytes, hipMemcpyHostToDevice, reps, "H2D pageable"));
  ASSIGN_OR_RETURN(b.d2h_pinned, BestGbps(pinned.get(), dev.get(), bytes, hipMemcpyDeviceToHost, reps, "D2H pinned"));
  ASSIGN_OR_RETURN(b.d2h_pageable,
                   BestGbps(pageable.data(), dev.get(), bytes, hipMemcpyDeviceToHost, reps, "D2H pageable"));
  return b;
}

}  // namespace

GpuReport RunGpuChecks(const DoctorOptions& o) {
  GpuReport rep;
  rep.has_backend = true;
  rep.backend = GpuBackendName();

#if defined(CONVEYOR_GPU_NVIDIA)
  rep.access.push_back(CheckDeviceNode("/dev/nvidiactl", "NVIDIA", true));
#else
  const CheckResult kfd = CheckDeviceNode("/dev/kfd", "amdgpu (KFD)", true);
  rep.access.push_back(kfd);
  rep.access.push_back(CheckGpuGroups({"render", "video"}, kfd.verdict == Verdict::kOk, "/dev/kfd"));
#endif

  int count = 0;
  const hipError_t err = hipGetDeviceCount(&count);
  int runtime = 0, driver = 0;
  (void)hipRuntimeGetVersion(&runtime);
  (void)hipDriverGetVersion(&driver);
  if (err != hipSuccess || count == 0) {
    // CUDA without a driver says "insufficient driver"; both mean there is no device.
    rep.no_device_reason =
        err != hipSuccess
            ? std::string(kCountCall) + ": " + ErrorText(err)
            : std::string("the runtime reports zero devices");
    rep.devices.push_back(CheckResult{"devices", Verdict::kFail, "none: " + rep.no_device_reason + "; " + Versions(runtime, driver), {}});
    for (const char* n : {"sync copy", "kernel", "overlap", "H2D bandwidth", "D2H bandwidth"}) {
      rep.copies.push_back(Skip(n, "no device"));
    }
    return rep;
  }
  rep.device_found = true;
  rep.devices.push_back(CheckResult{"devices",
                                    Verdict::kOk,
                                    std::to_string(count) + " found; " + Versions(runtime, driver),
                                    {{"device_count", count}, {"runtime_version", runtime}, {"driver_version", driver}}});
  for (int i = 0; i < count; ++i) {
    hipDeviceProp_t p;
    const hipError_t perr = hipGetDeviceProperties(&p, i);
    if (perr != hipSuccess) {
      rep.devices.push_back(Fail("device " + std::to_string(i), GpuStatus(perr, "hipGetDeviceProperties")));
      continue;
    }
    rep.devices.push_back(CheckResult{"device " + std::to_string(i),
                                      Verdict::kOk,
                                      std::string(p.name) + ", " + ArchOf(p) + ", " +
                                          FormatBytes(static_cast<double>(p.totalGlobalMem)) + ", " + UnitsOf(p),
                                      {{"device_" + std::to_string(i) + "_memory_bytes", static_cast<double>(p.totalGlobalMem)}}});
  }

  const Status set = GpuStatus(hipSetDevice(o.device), "hipSetDevice(" + std::to_string(o.device) + ")");
  if (!set.ok()) {
    rep.copies.push_back(Fail("sync copy", set));
    return rep;
  }
  rep.copies.push_back(SyncCopyCheck(std::min<size_t>(o.bandwidth_bytes, size_t{4} << 20)));

  auto rig = OverlapRig::Create(o.bandwidth_bytes);
  if (!rig.ok()) {
    rep.copies.push_back(Fail("kernel", rig.status()));
    rep.copies.push_back(Skip("overlap", "no streams/buffers"));
  } else {
    const CheckResult kernel = KernelCheck(*rig);
    rep.copies.push_back(kernel);
    if (kernel.verdict != Verdict::kOk) {
      rep.copies.push_back(Skip("overlap", "the kernel does not run"));
    } else {
      auto t = MeasureOverlap(*rig, o.bandwidth_bytes, o.reps);
      rep.copies.push_back(t.ok() ? OverlapVerdict(t->copy_ms, t->kernel_ms, t->together_ms, o.bandwidth_bytes)
                                  : Fail("overlap", t.status()));
    }
  }

  auto bw = MeasureBandwidth(o.bandwidth_bytes, o.reps);
  if (!bw.ok()) {
    rep.copies.push_back(Fail("bandwidth", bw.status()));
  } else {
    rep.copies.push_back(BandwidthVerdict("H2D", bw->h2d_pinned, bw->h2d_pageable, o.bandwidth_bytes, o.reps));
    rep.copies.push_back(BandwidthVerdict("D2H", bw->d2h_pinned, bw->d2h_pageable, o.bandwidth_bytes, o.reps));
  }
  return rep;
}

}  // namespace conveyor::doctor
