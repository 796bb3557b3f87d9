// conveyord's metric catalogue (see daemon_metrics.h).
#include "daemon_metrics.h"

namespace conveyor::metrics {
namespace {

// A stage of one frame takes from ~10 µs (a small readback) to ~1 s (a 4K frame on the
// CPU): 1-2.5-5 steps cover that with 16 buckets.
const std::vector<double> kStageBuckets = {1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3,
                                           5e-3, 1e-2,   2.5e-2, 5e-2, 0.1,  0.25,   0.5,  1.0};
// End to end includes queueing behind other sessions, so it reaches further.
const std::vector<double> kLatencyBuckets = {1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
                                             5e-2, 0.1,    0.25, 0.5,  1.0,    2.5,  5.0,  10.0};
// A transcode session lasts from a refused spec (well under 0.1 s) to a long stream
// (an hour and more); past an hour it counts in +Inf.
const std::vector<double> kSessionBuckets = {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800, 3600};

constexpr char kOtherRendition[] = "other";

MetricSpec Spec(std::string name, std::string help, std::vector<std::string> labels = {},
                size_t max_children = 1000) {
  MetricSpec s;
  s.name = std::move(name);
  s.help = std::move(help);
  s.label_names = std::move(labels);
  s.max_children = max_children;
  return s;
}

}  // namespace

const char* StageName(Stage stage) {
  switch (stage) {
    case Stage::kUpload: return "upload";
    case Stage::kEncode: return "encode";
    case Stage::kReadback: return "readback";
    case Stage::kDecode: return "decode";
    case Stage::kMux: return "mux";
  }
  return "unknown";
}

const char* FrameFailureName(FrameFailure reason) {
  switch (reason) {
    case FrameFailure::kInvalidArgument: return "invalid_argument";
    case FrameFailure::kGpuError: return "gpu_error";
    case FrameFailure::kCancelled: return "cancelled";
    case FrameFailure::kInternal: return "internal";
  }
  return "unknown";
}

const char* GrpcCodeName(int code) {
  static const char* const kNames[kGrpcCodeCount] = {
      "OK",           "CANCELLED",     "UNKNOWN",  "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
      "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
      "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE",      "DATA_LOSS",         "UNAUTHENTICATED"};
  return code >= 0 && code < kGrpcCodeCount ? kNames[code] : "UNKNOWN";
}

const char* RpcMethodName(RpcMethod method) {
  switch (method) {
    case RpcMethod::kTranscode: return "Transcode";
    case RpcMethod::kGetServerStatus: return "GetServerStatus";
    case RpcMethod::kListSessions: return "ListSessions";
    case RpcMethod::kCancelSession: return "CancelSession";
  }
  return "unknown";
}

const char* AuthFailureName(AuthFailure reason) {
  switch (reason) {
    case AuthFailure::kMissing: return "missing";
    case AuthFailure::kMalformed: return "malformed";
    case AuthFailure::kUnknownToken: return "unknown_token";
  }
  return "unknown";
}

const char* SessionRejectionName(SessionRejection reason) {
  switch (reason) {
    case SessionRejection::kSessionCap: return "session_cap";
    case SessionRejection::kDraining: return "draining";
    case SessionRejection::kInvalidSpec: return "invalid_spec";
    case SessionRejection::kMemoryBudget: return "memory_budget";
  }
  return "unknown";
}

StatusOr<DaemonMetrics> DaemonMetrics::Create(Registry& r, const BuildInfo& build) {
  DaemonMetrics m;
  ASSIGN_OR_RETURN(GaugeFamily * build_info,
                   r.AddGauge(Spec("conveyor_build_info",
                                   "Always 1; the labels say which conveyord build is running.",
                                   {"version", "gpu_backend"})));
  ASSIGN_OR_RETURN(Gauge * info, build_info->WithLabels({build.version, build.gpu_backend}));
  info->Set(1);

  ASSIGN_OR_RETURN(m.frames_in_,
                   r.AddCounter(Spec("conveyor_frames_in_total",
                                     "Decoded or raw frames handed to a worker.", {"device"})));
  ASSIGN_OR_RETURN(m.frames_out_,
                   r.AddCounter(Spec("conveyor_frames_out_total",
                                     "JPEG frames produced, by worker and rendition (WxH).",
                                     {"device", "rendition"}, kMaxRenditionsPerFamily)));
  ASSIGN_OR_RETURN(m.bytes_in_,
                   r.AddCounter(Spec("conveyor_bytes_in_total",
                                     "Bytes received from clients (container or raw frames), by "
                                     "the worker that took them.",
                                     {"device"})));
  ASSIGN_OR_RETURN(m.bytes_out_,
                   r.AddCounter(Spec("conveyor_bytes_out_total",
                                     "Bytes of JPEG or muxed output sent to clients.", {"device"})));
  ASSIGN_OR_RETURN(CounterFamily * failed,
                   r.AddCounter(Spec("conveyor_frames_failed_total",
                                     "Frames that produced no output, by reason.", {"reason"})));
  for (size_t i = 0; i < kFrameFailureCount; ++i) {
    ASSIGN_OR_RETURN(m.frames_failed_[i],
                     failed->WithLabels({FrameFailureName(static_cast<FrameFailure>(i))}));
  }

  ASSIGN_OR_RETURN(m.sessions_active_,
                   r.AddCallbackGauge(Spec("conveyor_sessions_active",
                                           "Transcode sessions open now.")));
  ASSIGN_OR_RETURN(CounterFamily * started,
                   r.AddCounter(Spec("conveyor_sessions_started_total",
                                     "Transcode sessions accepted since start.")));
  ASSIGN_OR_RETURN(m.sessions_started_, started->WithLabels({}));
  ASSIGN_OR_RETURN(CounterFamily * heap_releases,
                   r.AddCounter(Spec("conveyor_idle_heap_releases_total",
                                     "Times the daemon, with no session for 2 s, returned its free heap "
                                     "pages (freed frame buffers) to the OS.")));
  ASSIGN_OR_RETURN(m.idle_heap_releases_, heap_releases->WithLabels({}));
  ASSIGN_OR_RETURN(m.heap_in_use_,
                   r.AddCallbackGauge(Spec("conveyor_heap_in_use_bytes",
                                           "Bytes of the daemon's malloc heap handed out and not yet freed. "
                                           "A leak grows it; resident memory also counts pages that a few "
                                           "live blocks pin among free ones.")));
  ASSIGN_OR_RETURN(m.input_spool_,
                   r.AddCallbackGauge(Spec("conveyor_input_spool_bytes",
                                           "Bytes of client input held in spool files: MP4s whose moov follows "
                                           "mdat, from clients that cannot seek. limits.input_spool_bytes bounds "
                                           "each session's.")));
  ASSIGN_OR_RETURN(m.heap_free_,
                   r.AddCallbackGauge(Spec("conveyor_heap_free_bytes",
                                           "Free bytes the daemon's malloc heap holds (resident or not).")));
  ASSIGN_OR_RETURN(m.pinned_input_,
                   r.AddCallbackGauge(Spec("conveyor_pinned_input_bytes",
                                           "Page-locked host memory for assembling raw frames sent in messages "
                                           "on GPU workers: state in_use, the rings of running sessions (and "
                                           "of their frames still with a worker); idle, rings kept for the "
                                           "next sessions. workers.pinned_input_bytes bounds the sum.",
                                           {"state"})));
  ASSIGN_OR_RETURN(CounterFamily * rejected,
                   r.AddCounter(Spec("conveyor_sessions_rejected_total",
                                     "Transcode sessions refused, by reason.", {"reason"})));
  for (size_t i = 0; i < kSessionRejectionCount; ++i) {
    ASSIGN_OR_RETURN(m.sessions_rejected_[i],
                     rejected->WithLabels({SessionRejectionName(static_cast<SessionRejection>(i))}));
  }

  ASSIGN_OR_RETURN(CounterFamily * ended,
                   r.AddCounter(Spec("conveyor_sessions_ended_total",
                                     "Transcode streams ended, by the gRPC status code they ended with "
                                     "(refused ones included: INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE).",
                                     {"code"}, kGrpcCodeCount)));
  for (int code = 0; code < kGrpcCodeCount; ++code) {
    ASSIGN_OR_RETURN(m.sessions_ended_[code], ended->WithLabels({GrpcCodeName(code)}));
  }
  ASSIGN_OR_RETURN(HistogramFamily * duration,
                   r.AddHistogram(Spec("conveyor_session_duration_seconds",
                                       "Time from a transcode session's acceptance to its final status, "
                                       "whatever that status."),
                                  kSessionBuckets));
  ASSIGN_OR_RETURN(m.session_duration_, duration->WithLabels({}));
  ASSIGN_OR_RETURN(CounterFamily * rpc_requests,
                   r.AddCounter(Spec("conveyor_rpc_requests_total",
                                     "conveyor.v1.Transcoder calls, by method and the gRPC status code they "
                                     "finished with, counted once a call when its status is sent (refusals "
                                     "included: UNAUTHENTICATED for a bad token). For method Transcode the count "
                                     "by code is conveyor_sessions_ended_total's: the same streams, counted at "
                                     "the same moment. Health and reflection calls are not counted.",
                                     {"method", "code"}, kRpcMethodCount * kGrpcCodeCount)));
  for (size_t method = 0; method < kRpcMethodCount; ++method) {
    for (int code = 0; code < kGrpcCodeCount; ++code) {
      ASSIGN_OR_RETURN(m.rpc_requests_[method][code],
                       rpc_requests->WithLabels({RpcMethodName(static_cast<RpcMethod>(method)), GrpcCodeName(code)}));
    }
  }
  ASSIGN_OR_RETURN(CounterFamily * auth_failures,
                   r.AddCounter(Spec("conveyor_auth_failures_total",
                                     "conveyor.v1.Transcoder calls refused (UNAUTHENTICATED) for their bearer token "
                                     "(server.auth_token_file), by reason: missing (no authorization metadata), "
                                     "malformed (not 'Bearer TOKEN'), unknown_token. Each also counts in "
                                     "conveyor_rpc_requests_total. A client certificate that mutual TLS refuses "
                                     "ends the connection in the handshake, before any call, so it counts "
                                     "nowhere here; the log shows gRPC's handshake error.",
                                     {"reason"})));
  for (size_t i = 0; i < kAuthFailureCount; ++i) {
    ASSIGN_OR_RETURN(m.auth_failures_[i], auth_failures->WithLabels({AuthFailureName(static_cast<AuthFailure>(i))}));
  }
  ASSIGN_OR_RETURN(m.ready_, r.AddCallbackGauge(Spec("conveyor_ready",
                                                      "1 while the daemon takes new sessions (/readyz answers 200: "
                                                      "not draining, under the session cap), else 0.")));
  ASSIGN_OR_RETURN(m.draining_, r.AddCallbackGauge(Spec("conveyor_draining",
                                                         "1 while the daemon drains (after SIGTERM), else 0.")));
  ASSIGN_OR_RETURN(m.sessions_max_,
                   r.AddCallbackGauge(Spec("conveyor_sessions_max",
                                           "The session cap (limits.max_sessions) in force, reloads included.")));
  ASSIGN_OR_RETURN(m.sessions_memory_estimate_,
                   r.AddCallbackGauge(Spec("conveyor_sessions_memory_estimate_bytes",
                                           "Memory the running sessions are estimated to hold together, from their "
                                           "jobs and the session bounds: what limits.memory_budget_bytes admits "
                                           "sessions against.")));
  ASSIGN_OR_RETURN(m.sessions_memory_budget_,
                   r.AddCallbackGauge(Spec("conveyor_sessions_memory_budget_bytes",
                                           "The memory budget in force (limits.memory_budget_bytes, auto resolved), "
                                           "reloads included; +Inf when sessions are admitted by count only.")));
  ASSIGN_OR_RETURN(m.tls_expiry_,
                   r.AddCallbackGauge(Spec("conveyor_tls_certificate_expiry_timestamp_seconds",
                                           "notAfter, as Unix time, of the TLS certificates the gRPC server holds "
                                           "now (a SIGHUP reload included), by role: server, the certificate it "
                                           "serves (server.tls_cert_file); client_ca, the first of the client CA "
                                           "file's certificates to expire (server.tls_client_ca_file). Absent "
                                           "without TLS or mutual TLS.",
                                           {"role"}, 2)));
  ASSIGN_OR_RETURN(m.queue_depth_,
                   r.AddCallbackGauge(Spec("conveyor_queue_depth",
                                           "Frames queued for a worker and not yet started.",
                                           {"device"})));
  ASSIGN_OR_RETURN(m.stage_duration_,
                   r.AddHistogram(Spec("conveyor_stage_duration_seconds",
                                       "Time one frame spends in one pipeline stage. GPU workers "
                                       "time runs of 64 consecutive frames, one run a second at most.",
                                       {"stage", "device"}),
                                  kStageBuckets));
  ASSIGN_OR_RETURN(HistogramFamily * decode_duration,
                   r.AddHistogram(Spec("conveyor_decode_duration_seconds",
                                       "Time the video decoder took to deliver one frame of container input, "
                                       "by where it decodes: gpu (the video engines, through FFmpeg's hwaccel) "
                                       "or cpu. _count is frames decoded, _sum the decoders' busy time.",
                                       {"decoder"}),
                                  kStageBuckets));
  ASSIGN_OR_RETURN(CounterFamily * decode_sessions,
                   r.AddCounter(Spec("conveyor_decode_sessions_total",
                                     "Container-input sessions by where their video was decoded: gpu or cpu.",
                                     {"decoder"})));
  for (DecoderKind k : {DecoderKind::kCpu, DecoderKind::kGpu}) {
    ASSIGN_OR_RETURN(m.decode_duration_[static_cast<size_t>(k)], decode_duration->WithLabels({DecoderKindName(k)}));
    ASSIGN_OR_RETURN(m.decode_sessions_[static_cast<size_t>(k)], decode_sessions->WithLabels({DecoderKindName(k)}));
  }
  ASSIGN_OR_RETURN(CounterFamily * decode_failovers,
                   r.AddCounter(Spec("conveyor_decode_failovers_total",
                                     "Container-input sessions whose video left the video engines mid-stream "
                                     "for the CPU decoder, by reason: error (a hwaccel error), format (a part "
                                     "the engines do not take), balance (moved by the decode balancer while "
                                     "the engines were the bottleneck).",
                                     {"reason"})));
  const std::pair<FailoverReason, const char*> reasons[] = {
      {FailoverReason::kError, "error"}, {FailoverReason::kFormat, "format"}, {FailoverReason::kBalance, "balance"}};
  for (const auto& [reason, name] : reasons) {
    ASSIGN_OR_RETURN(m.decode_failovers_[static_cast<size_t>(reason)], decode_failovers->WithLabels({name}));
  }
  ASSIGN_OR_RETURN(m.decoder_surfaces_,
                   r.AddCallbackGauge(Spec("conveyor_decoder_surface_bytes",
                                           "Device memory of hardware-decoded surfaces that frames on their way "
                                           "to the device's encoder hold.",
                                           {"device"})));
  ASSIGN_OR_RETURN(m.decoders_retired_,
                   r.AddCallbackGauge(Spec("conveyor_decoders_retired",
                                           "Hardware decoders closed and waiting for their teardown on the "
                                           "device's lifecycle thread, which runs once their frames are freed "
                                           "and no decoder is being created; their surfaces stay allocated "
                                           "until then.",
                                           {"device"})));
  ASSIGN_OR_RETURN(m.video_engines_,
                   r.AddCallbackGauge(Spec("conveyor_video_engines",
                                           "Video decode engines of the device that take H.264, as its driver "
                                           "counts them (NVIDIA's NVDEC); absent where the driver has no count.",
                                           {"device"})));
  ASSIGN_OR_RETURN(m.frame_latency_,
                   r.AddHistogram(Spec("conveyor_frame_latency_seconds",
                                       "Time from a frame entering the worker queue to its JPEG "
                                       "being ready, queueing included.",
                                       {"device"}),
                                  kLatencyBuckets));
  ASSIGN_OR_RETURN(m.stream_overlap_,
                   r.AddGauge(Spec("conveyor_stream_overlap_ratio",
                                   "Share (0..1) of the worker's busy time in which copies and "
                                   "kernels ran at once on different streams, over its last run "
                                   "of timed frames.",
                                   {"device"})));
  ASSIGN_OR_RETURN(m.pinned_allocated_,
                   r.AddGauge(Spec("conveyor_pinned_memory_allocated_bytes",
                                   "Pinned host memory the worker holds.", {"device"})));
  ASSIGN_OR_RETURN(m.pinned_in_use_,
                   r.AddGauge(Spec("conveyor_pinned_memory_in_use_bytes",
                                   "Pinned host memory holding frames in flight.", {"device"})));
  ASSIGN_OR_RETURN(m.device_memory_used_,
                   r.AddGauge(Spec("conveyor_device_memory_used_bytes",
                                   "Device memory the worker has allocated.", {"device"})));
  ASSIGN_OR_RETURN(m.decode_errors_,
                   r.AddCounter(Spec("conveyor_decode_errors_total",
                                     "Errors the video decoder reported on container input and the session "
                                     "concealed (a refused packet, an unfinished frame, a frame with "
                                     "concealed damage), by codec.",
                                     {"codec"}, kMaxCodecsPerFamily)));
  ASSIGN_OR_RETURN(m.frames_dropped_,
                   r.AddCounter(Spec("conveyor_frames_dropped_total",
                                     "Decoded frames not encoded because their pts was not after the "
                                     "previous frame's (container output), by codec.",
                                     {"codec"}, kMaxCodecsPerFamily)));
  ASSIGN_OR_RETURN(m.inputs_truncated_,
                   r.AddCounter(Spec("conveyor_inputs_truncated_total",
                                     "Container inputs that ended early (a read error, a packet cut short, "
                                     "fewer packets than the index lists) and were transcoded as far as "
                                     "they went, by codec.",
                                     {"codec"}, kMaxCodecsPerFamily)));
  // The overflow children exist before any input's codec can fill the families.
  for (CounterFamily* f : {m.decode_errors_, m.frames_dropped_, m.inputs_truncated_}) {
    RETURN_IF_ERROR(f->WithLabels({"other"}).status());
  }
  ASSIGN_OR_RETURN(m.worker_restarts_,
                   r.AddCounter(Spec("conveyor_worker_restarts_total",
                                     "Times a worker was restarted after a device error.",
                                     {"device"})));
  return m;
}

StatusOr<DeviceMetrics> DaemonMetrics::ForDevice(const std::string& device) {
  DeviceMetrics d;
  ASSIGN_OR_RETURN(d.frames_in, frames_in_->WithLabels({device}));
  ASSIGN_OR_RETURN(d.bytes_in, bytes_in_->WithLabels({device}));
  ASSIGN_OR_RETURN(d.bytes_out, bytes_out_->WithLabels({device}));
  ASSIGN_OR_RETURN(d.worker_restarts, worker_restarts_->WithLabels({device}));
  ASSIGN_OR_RETURN(d.stream_overlap_ratio, stream_overlap_->WithLabels({device}));
  ASSIGN_OR_RETURN(d.pinned_memory_allocated_bytes, pinned_allocated_->WithLabels({device}));
  ASSIGN_OR_RETURN(d.pinned_memory_in_use_bytes, pinned_in_use_->WithLabels({device}));
  ASSIGN_OR_RETURN(d.device_memory_used_bytes, device_memory_used_->WithLabels({device}));
  ASSIGN_OR_RETURN(d.frame_latency_seconds, frame_latency_->WithLabels({device}));
  for (size_t i = 0; i < kStageCount; ++i) {
    ASSIGN_OR_RETURN(d.stage_seconds[i],
                     stage_duration_->WithLabels({StageName(static_cast<Stage>(i)), device}));
  }
  // The overflow child exists before any client-chosen rendition can fill the family.
  RETURN_IF_ERROR(frames_out_->WithLabels({device, kOtherRendition}).status());
  return d;
}

StatusOr<Counter*> DaemonMetrics::FramesOut(const std::string& device, const std::string& rendition) {
  StatusOr<Counter*> c = frames_out_->WithLabels({device, rendition});
  if (c.ok() || c.status().code() != StatusCode::kResourceExhausted) return c;
  return frames_out_->WithLabels({device, kOtherRendition});
}

namespace {

StatusOr<Counter*> CodecChild(CounterFamily* family, const std::string& codec) {
  StatusOr<Counter*> c = family->WithLabels({codec});
  if (c.ok() || c.status().code() != StatusCode::kResourceExhausted) return c;
  return family->WithLabels({"other"});
}

}  // namespace

StatusOr<Counter*> DaemonMetrics::DecodeErrors(const std::string& codec) { return CodecChild(decode_errors_, codec); }
StatusOr<Counter*> DaemonMetrics::FramesDropped(const std::string& codec) {
  return CodecChild(frames_dropped_, codec);
}
StatusOr<Counter*> DaemonMetrics::InputsTruncated(const std::string& codec) {
  return CodecChild(inputs_truncated_, codec);
}

StatusOr<ScopedCallback> DaemonMetrics::BindSessionsActive(std::function<double()> fn) {
  return sessions_active_->Bind({}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindHeapInUse(std::function<double()> fn) {
  return heap_in_use_->Bind({}, std::move(fn));
}

const char* DaemonMetrics::DecoderKindName(DecoderKind k) { return k == DecoderKind::kGpu ? "gpu" : "cpu"; }

StatusOr<ScopedCallback> DaemonMetrics::BindDecoderSurfaces(const std::string& device, std::function<double()> fn) {
  return decoder_surfaces_->Bind({device}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindRetiredDecoders(const std::string& device, std::function<double()> fn) {
  return decoders_retired_->Bind({device}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindVideoEngines(const std::string& device, std::function<double()> fn) {
  return video_engines_->Bind({device}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindInputSpool(std::function<double()> fn) {
  return input_spool_->Bind({}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindHeapFree(std::function<double()> fn) {
  return heap_free_->Bind({}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindPinnedInput(const std::string& state, std::function<double()> fn) {
  return pinned_input_->Bind({state}, std::move(fn));
}

Counter& DaemonMetrics::SessionsEnded(StatusCode code) const {
  const int c = static_cast<int>(code);
  return *sessions_ended_[c >= 0 && c < kGrpcCodeCount ? c : 2];  // 2: UNKNOWN
}

Counter& DaemonMetrics::RpcRequests(RpcMethod method, StatusCode code) const {
  const int c = static_cast<int>(code);
  return *rpc_requests_[static_cast<size_t>(method)][c >= 0 && c < kGrpcCodeCount ? c : 2];  // 2: UNKNOWN
}

StatusOr<ScopedCallback> DaemonMetrics::BindReady(std::function<double()> fn) {
  return ready_->Bind({}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindDraining(std::function<double()> fn) {
  return draining_->Bind({}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindSessionsMax(std::function<double()> fn) {
  return sessions_max_->Bind({}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindSessionsMemoryEstimate(std::function<double()> fn) {
  return sessions_memory_estimate_->Bind({}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindSessionsMemoryBudget(std::function<double()> fn) {
  return sessions_memory_budget_->Bind({}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindTlsCertificateExpiry(const std::string& role,
                                                                  std::function<double()> fn) {
  return tls_expiry_->Bind({role}, std::move(fn));
}

StatusOr<ScopedCallback> DaemonMetrics::BindQueueDepth(const std::string& device, std::function<double()> fn) {
  return queue_depth_->Bind({device}, std::move(fn));
}

}  // namespace conveyor::metrics
