// conveyord's metric catalogue: every family the daemon exports, registered in one place
// with its name, unit, labels and help, and the handles callers keep so that counting a
// frame is an atomic add, with no lookup or allocation on the hot path.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "metrics_registry.h"

namespace conveyor::metrics {

// The `stage` label of conveyor_stage_duration_seconds.
enum class Stage { kUpload, kEncode, kReadback, kDecode, kMux };
inline constexpr size_t kStageCount = 5;
const char* StageName(Stage stage);

// The `reason` label of conveyor_frames_failed_total.
enum class FrameFailure { kInvalidArgument, kGpuError, kCancelled, kInternal };
inline constexpr size_t kFrameFailureCount = 4;
const char* FrameFailureName(FrameFailure reason);

// The `reason` label of conveyor_sessions_rejected_total.
enum class SessionRejection { kSessionCap, kDraining, kInvalidSpec, kMemoryBudget };
inline constexpr size_t kSessionRejectionCount = 4;
const char* SessionRejectionName(SessionRejection reason);

// The `code` label of conveyor_sessions_ended_total: gRPC's canonical code names, 0..16
// ("OK", "CANCELLED", "INVALID_ARGUMENT"...); a number outside them is "UNKNOWN".
inline constexpr int kGrpcCodeCount = 17;
const char* GrpcCodeName(int code);

// The `method` label of conveyor_rpc_requests_total: conveyor.v1.Transcoder's methods.
enum class RpcMethod { kTranscode, kGetServerStatus, kListSessions, kCancelSession };
inline constexpr size_t kRpcMethodCount = 4;
const char* RpcMethodName(RpcMethod method);

// The `reason` label of conveyor_auth_failures_total: why a bearer token was refused.
enum class AuthFailure { kMissing, kMalformed, kUnknownToken };
inline constexpr size_t kAuthFailureCount = 3;
const char* AuthFailureName(AuthFailure reason);

struct BuildInfo {
  std::string version;      // PROJECT_VERSION
  std::string gpu_backend;  // GpuBackendName(): "hip-nvidia", "hip-amd" or "none"
};

// One worker's handles (label device = the worker's device string, "cpu" or "gpu0").
// Look them up once when the worker starts; the pointers live as long as the registry.
struct DeviceMetrics {
  Counter* frames_in = nullptr;
  Counter* bytes_in = nullptr;
  Counter* bytes_out = nullptr;
  Counter* worker_restarts = nullptr;
  Gauge* stream_overlap_ratio = nullptr;
  // Set from Worker::Stats() by the daemon's once-a-second update, not read at scrape
  // time: one Stats() call per worker a second whatever the scrape rate.
  Gauge* pinned_memory_allocated_bytes = nullptr;  // pinned host memory held
  Gauge* pinned_memory_in_use_bytes = nullptr;     // of that, in frames in flight
  Gauge* device_memory_used_bytes = nullptr;
  Histogram* frame_latency_seconds = nullptr;
  std::array<Histogram*, kStageCount> stage_seconds{};

  Histogram& stage(Stage s) const { return *stage_seconds[static_cast<size_t>(s)]; }
};

class DaemonMetrics {
 public:
  // Registers every family in `registry`, which must outlive this object and every
  // handle and binding taken from it. INVALID_ARGUMENT if a name is already taken.
  static StatusOr<DaemonMetrics> Create(Registry& registry, const BuildInfo& build);

  // Creates the device's children (all zero) so its series exist from the first scrape.
  StatusOr<DeviceMetrics> ForDevice(const std::string& device);

  // Frames of one rendition ("1920x1080"); look it up once per session and rendition.
  // Renditions come from clients, so their number is capped: past the cap the frames are
  // counted under rendition="other" (created by ForDevice).
  StatusOr<Counter*> FramesOut(const std::string& device, const std::string& rendition);

  // Pre-created, so these cannot fail.
  Counter& FramesFailed(FrameFailure reason) const {
    return *frames_failed_[static_cast<size_t>(reason)];
  }
  Counter& SessionsStarted() const { return *sessions_started_; }
  Counter& IdleHeapReleases() const { return *idle_heap_releases_; }
  Counter& SessionsRejected(SessionRejection reason) const {
    return *sessions_rejected_[static_cast<size_t>(reason)];
  }
  // Transcode streams by the status they ended with, refusals included (a bad spec, the
  // cap, draining): every gRPC code is pre-created, so the label stays bounded.
  Counter& SessionsEnded(StatusCode code) const;
  // Accepted sessions, from acceptance to their final status.
  Histogram& SessionDuration() const { return *session_duration_; }
  // conveyor.v1.Transcoder calls by method and the status they finished with, counted
  // once a call when it finishes; a Transcode call counts here and in SessionsEnded.
  Counter& RpcRequests(RpcMethod method, StatusCode code) const;
  // Calls refused for their bearer token, by reason.
  Counter& AuthFailures(AuthFailure reason) const { return *auth_failures_[static_cast<size_t>(reason)]; }

  // Damaged container input, by the video codec ("h264"): errors the decoder reported
  // (counted and concealed), decoded frames dropped for a pts that did not increase, and
  // inputs that ended early. Codecs come from the accepted list, but the families are
  // capped all the same; past the cap a codec counts as "other".
  StatusOr<Counter*> DecodeErrors(const std::string& codec);
  StatusOr<Counter*> FramesDropped(const std::string& codec);
  StatusOr<Counter*> InputsTruncated(const std::string& codec);
  static constexpr size_t kMaxCodecsPerFamily = 32;

  // Container input by where its video is decoded (DecoderKind): each frame's decode
  // time (conveyor_decode_duration_seconds: _count is frames decoded, _sum the decoder's
  // busy time), and the sessions that decoded there.
  enum class DecoderKind { kCpu, kGpu };
  static const char* DecoderKindName(DecoderKind k);
  Histogram& DecodeDuration(DecoderKind k) const { return *decode_duration_[static_cast<size_t>(k)]; }
  Counter& DecodeSessions(DecoderKind k) const { return *decode_sessions_[static_cast<size_t>(k)]; }
  // Sessions whose video left the engines mid-stream for the CPU decoder, by reason:
  // error (a hwaccel error), format (a part the engines do not take), balance (moved by
  // the decode balancer, the engines being the bottleneck).
  enum class FailoverReason { kError, kFormat, kBalance };
  Counter& DecodeFailovers(FailoverReason r) const { return *decode_failovers_[static_cast<size_t>(r)]; }

  // Scrape-time gauges. Keep the returned bindings alive exactly as long as what the
  // functions read (the session manager, the scheduler).
  StatusOr<ScopedCallback> BindSessionsActive(std::function<double()> fn);
  // The process's malloc heap: bytes in use, and free bytes it holds.
  StatusOr<ScopedCallback> BindHeapInUse(std::function<double()> fn);
  StatusOr<ScopedCallback> BindHeapFree(std::function<double()> fn);
  // Bytes of client input spooled to files (media::InputSpool), all sessions together.
  StatusOr<ScopedCallback> BindInputSpool(std::function<double()> fn);
  // Page-locked host memory for assembling raw frames from messages; `state`: "in_use"
  // (running sessions' rings) or "idle" (rings kept for the next sessions).
  StatusOr<ScopedCallback> BindPinnedInput(const std::string& state, std::function<double()> fn);
  // Device memory of decoded surfaces that frames on their way to the device's encoder
  // hold (hardware decoding with device frames).
  StatusOr<ScopedCallback> BindDecoderSurfaces(const std::string& device, std::function<double()> fn);
  // The device's video decode engines, where the driver counts them (NVDEC).
  StatusOr<ScopedCallback> BindRetiredDecoders(const std::string& device, std::function<double()> fn);
  StatusOr<ScopedCallback> BindVideoEngines(const std::string& device, std::function<double()> fn);
  // The session manager's state: 1 while /readyz answers 200 (not draining, under the
  // cap), else 0; 1 while draining; the session cap (limits.max_sessions), reloads included.
  StatusOr<ScopedCallback> BindReady(std::function<double()> fn);
  StatusOr<ScopedCallback> BindDraining(std::function<double()> fn);
  StatusOr<ScopedCallback> BindSessionsMax(std::function<double()> fn);
  // Admission by memory: the running sessions' memory estimates together, and the budget
  // they are admitted against (limits.memory_budget_bytes resolved; +Inf: none).
  StatusOr<ScopedCallback> BindSessionsMemoryEstimate(std::function<double()> fn);
  StatusOr<ScopedCallback> BindSessionsMemoryBudget(std::function<double()> fn);
  // The notAfter (Unix time) of a TLS certificate the gRPC server holds, by role: "server"
  // (the certificate served) or "client_ca" (the earliest of the client CA file's).
  StatusOr<ScopedCallback> BindTlsCertificateExpiry(const std::string& role, std::function<double()> fn);
  // `fn`: frames waiting for the device's worker.
  StatusOr<ScopedCallback> BindQueueDepth(const std::string& device, std::function<double()> fn);

  // Children of conveyor_frames_out_total, all devices together, before "other" takes over.
  static constexpr size_t kMaxRenditionsPerFamily = 256;

 private:
  DaemonMetrics() = default;

  CounterFamily* frames_in_ = nullptr;
  CounterFamily* frames_out_ = nullptr;
  CounterFamily* bytes_in_ = nullptr;
  CounterFamily* bytes_out_ = nullptr;
  CounterFamily* worker_restarts_ = nullptr;
  CounterFamily* decode_errors_ = nullptr;
  CounterFamily* frames_dropped_ = nullptr;
  CounterFamily* inputs_truncated_ = nullptr;
  GaugeFamily* stream_overlap_ = nullptr;
  HistogramFamily* stage_duration_ = nullptr;
  HistogramFamily* frame_latency_ = nullptr;
  CallbackGaugeFamily* sessions_active_ = nullptr;
  CallbackGaugeFamily* heap_in_use_ = nullptr;
  CallbackGaugeFamily* heap_free_ = nullptr;
  CallbackGaugeFamily* input_spool_ = nullptr;
  CallbackGaugeFamily* decoder_surfaces_ = nullptr;
  CallbackGaugeFamily* decoders_retired_ = nullptr;
  CallbackGaugeFamily* video_engines_ = nullptr;
  std::array<Histogram*, 2> decode_duration_{};
  std::array<Counter*, 2> decode_sessions_{};
  std::array<Counter*, 3> decode_failovers_{};
  CallbackGaugeFamily* pinned_input_ = nullptr;
  CallbackGaugeFamily* queue_depth_ = nullptr;
  GaugeFamily* pinned_allocated_ = nullptr;
  GaugeFamily* pinned_in_use_ = nullptr;
  GaugeFamily* device_memory_used_ = nullptr;
  std::array<Counter*, kFrameFailureCount> frames_failed_{};
  Counter* sessions_started_ = nullptr;
  Counter* idle_heap_releases_ = nullptr;
  std::array<Counter*, kSessionRejectionCount> sessions_rejected_{};
  std::array<Counter*, kGrpcCodeCount> sessions_ended_{};
  Histogram* session_duration_ = nullptr;
  std::array<std::array<Counter*, kGrpcCodeCount>, kRpcMethodCount> rpc_requests_{};
  std::array<Counter*, kAuthFailureCount> auth_failures_{};
  CallbackGaugeFamily* ready_ = nullptr;
  CallbackGaugeFamily* draining_ = nullptr;
  CallbackGaugeFamily* sessions_max_ = nullptr;
  CallbackGaugeFamily* sessions_memory_estimate_ = nullptr;
  CallbackGaugeFamily* sessions_memory_budget_ = nullptr;
  CallbackGaugeFamily* tls_expiry_ = nullptr;
};

}  // namespace conveyor::metrics
