// Fuzz target: bytes a client sends as the first message of a Transcode stream, parsed as
// a TranscodeRequest and validated by ParseJobSpec, as the session manager does. A spec it
// accepts must never reach the engine with values the engine would refuse, so the
// accepted job is checked against the engine's own rules and resolved for a few sources.
#include <cstddef>
#include <cstdint>

#include <google/protobuf/stubs/logging.h>

#include "conveyor/v1/transcoder.pb.h"
#include "encode_params.h"
#include "job.h"

namespace {

using conveyor::Job;
using conveyor::JobLimits;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// The limits bound a picture landscape or portrait (2160x3840 fits 3840x2160).
bool Fits(int w, int h, const JobLimits& limits) {
  return (w <= limits.max_width && h <= limits.max_height) || (w <= limits.max_height && h <= limits.max_width);
}

void CheckAccepted(const Job& job, const JobLimits& limits) {
  Check(!job.renditions.empty() && job.renditions.size() <= 8);
  for (const conveyor::RequestedRendition& r : job.renditions) {
    Check(conveyor::ValidateParams(r.params).ok());
    Check(r.width >= 0 && r.height >= 0 && r.width <= limits.max_width && r.height <= limits.max_height);
    Check(!r.name.empty() && r.name.size() <= 64);
  }
  Check(job.label.size() <= 128);
  if (job.audio) Check(job.container_input && job.container_output);
  if (!job.container_input) {
    Check(job.raw_width >= 1 && job.raw_height >= 1);
    Check(Fits(job.raw_width, job.raw_height, limits));
    Check(job.frame_rate_num > 0 && job.frame_rate_den > 0);
    Check(job.RawFrameBytes() > 0);
  }

  // The session resolves renditions once the source size is known: raw input's own size,
  // or whatever a container declares (here the extremes the limits allow, and a sliver).
  const int sources[][2] = {{job.raw_width, job.raw_height}, {1, 1}, {limits.max_width, limits.max_height},
                            {limits.max_width, 1}, {1, limits.max_height}, {33, 17}};
  for (const auto& source : sources) {
    if (source[0] < 1 || source[1] < 1) continue;
    auto resolved = conveyor::ResolveRenditions(job, source[0], source[1], limits);
    if (!resolved.ok()) continue;
    Check(resolved->size() == job.renditions.size());
    for (const conveyor::Rendition& r : *resolved) {
      // 0x0 means the source size; anything else is a real size inside the limits.
      Check((r.width == 0 && r.height == 0) || (r.width >= 1 && r.height >= 1 && Fits(r.width, r.height, limits)));
      Check(conveyor::ValidateParams(r.params).ok());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // protobuf logs every string field that is not UTF-8, which random bytes mostly are.
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  conveyor::v1::TranscodeRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size)) || !request.has_spec()) return 0;
  // Both the daemon's default limits and a small configuration, since the checks differ
  // by limit (a rendition above a small limit, a frame rate past it).
  const JobLimits defaults;
  JobLimits small;
  small.max_width = 640;
  small.max_height = 360;
  small.max_frame_rate = 30;
  for (const JobLimits& limits : {defaults, small}) {
    auto job = conveyor::ParseJobSpec(request.spec(), limits);
    if (job.ok()) {
      CheckAccepted(*job, limits);
    } else {
      // Every refusal is INVALID_ARGUMENT naming a spec field.
      Check(job.status().code() == conveyor::StatusCode::kInvalidArgument);
      Check(job.status().message().rfind("spec.", 0) == 0);
    }
  }
  return 0;
}
