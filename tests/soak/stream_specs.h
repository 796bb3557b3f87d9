// The soak test's streams: good streams of several sizes, pixel formats, renditions and
// client rates, each with its input made once; how a client sends one; and what a solo run
// of each gave, which every soak session of that stream must match byte for byte.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "transcode_client.h"

namespace conveyor::soak {

struct StreamSpec {
  std::string name;  // "raw 96x64 yuv420p x2 @120fps"
  v1::JobSpec job;
  // Raw input: frame i is frames[i % frames.size()] with pts first_pts + i * pts_step.
  std::vector<std::vector<uint8_t>> frames;
  int64_t first_pts = 0, pts_step = 1;
  // Container input instead: this file, sent whole.
  std::string container_path;
  size_t chunk = 1 << 20;  // largest data field per request
  double fps = 0;          // the client's pace; 0: as fast as flow control lets it
  size_t length() const { return frames.size(); }
};

// Per rendition, the JPEGs and their pts a whole run of a stream gives.
struct Reference {
  std::map<uint32_t, std::vector<std::vector<uint8_t>>> frames;
  std::map<uint32_t, std::vector<int64_t>> pts;
  size_t total_frames() const;
};

// The good streams: raw input of 64x48 to 320x240 in five formats, one or two renditions,
// paced or not, plus two container streams of `h264_path` (320x240, H.264).
std::vector<StreamSpec> MakeGoodStreams(const std::string& h264_path);

// The stalled clients' stream: 320x240 random noise at quality 100, 4:4:4, so that its
// output fills the transport's windows and the session's output bound in few frames.
StreamSpec MakeStallStream();

// Sends frames [0, count) of a raw stream (frames repeat past its length), pacing to
// spec.fps when `paced`, or the container file when the stream has one (count unused).
// Stops early, returning false, when a write fails or `*stop` turns true.
bool SendStream(e2e::TranscodeStream* stream, const StreamSpec& spec, size_t count, bool paced,
                const std::atomic<bool>* stop = nullptr);

int64_t PtsOf(const StreamSpec& spec, size_t i);

// "" when `got` is a prefix of `want` (whole == true: all of it) in every rendition, bytes
// and pts; otherwise what differs first.
std::string CompareWithReference(const e2e::TranscodeOutcome& got, const Reference& want, bool whole);

}  // namespace conveyor::soak
