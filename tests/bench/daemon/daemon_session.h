// conveyor-bench-daemon's options and one of its Transcode streams: the spec it sends, the
// input as chunks, ranges (seekable_input.h) or raw frames (in messages or shared memory),
// and what comes back, timed on the client's side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "conveyor/v1/transcoder.grpc.pb.h"

namespace conveyor::bench {

struct DaemonBenchOptions {
  std::string conveyord;
  std::vector<std::string> daemon_args;
  std::string input;
  int sessions = 2;
  int quality = 85;
  std::string raw_size;  // WxH: stream raw yuv420p frames decoded by ffmpeg (latency mode)
  std::string raw_file;  // raw: frames already decoded (a host without ffmpeg, e.g. the GPU host)
  bool lockstep = false;  // raw: one frame in flight per session (gRPC overhead)
  int shared_memory_slots = 0;  // raw: frames through shared memory instead of messages
  int shared_output_slots = 0;  // JPEGs through the daemon's shared memory instead of messages
  std::string container;        // mkv | mov | avi: one muxed stream back instead of JPEG frames
  bool seekable = false;        // container input as ContainerRange runs, answering ReadRequests
  size_t chunk_bytes = size_t{1} << 20;  // container input's bytes a message (chunk or range)
  int ffmpeg_threads = 0;
  std::string reference = "auto";  // auto | ffmpeg | libav | none
  std::string reference_bin;       // libav: the conveyor-bench-libav-mjpeg binary
  std::string decode;              // cpu | gpu | auto: JobSpec.decode; empty leaves it unspecified
  std::string decode_reference;    // conveyor-bench-libav-decode, run before the daemon
  // Selection (JobSpec's): start_seconds when >= 0, max_frames, keyframes_only, and
  // frame_rate fps_num/fps_den when fps_num > 0.
  double start_seconds = -1;
  int64_t max_frames = 0;
  bool keyframes_only = false;
  int fps_num = 0, fps_den = 1;
};

struct SessionResult {
  grpc::Status status;
  uint64_t frames = 0, bytes = 0;
  uint64_t shared_jpegs = 0;  // JPEGs that came in the daemon's shared-memory slots
  double first_frame_s = 0;
  double encode_s = 0;  // the Summary's encode stage
  double queue_s = 0, handover_s = 0;  // its queue (worker's queue) and handover stages
  std::vector<std::pair<std::string, double>> stages;  // every stage of the Summary, in its order
  std::vector<double> latencies;  // raw mode: last chunk (or SharedFrame) sent -> frame received
  uint64_t bytes_sent = 0;        // input bytes this client wrote (every range run included)
  uint64_t read_requests = 0, spooled_bytes = 0;  // the Summary's
  std::string failure;            // the client's side, when it gave up
  std::string decoder;            // Started.decoder ("gpu", "cpu"; empty for raw input)
  std::string decoder_detail;     // Started.decoder_name and decoder_api, for the log
};

// One Transcode stream of `input`: container bytes, or raw yuv420p frames of raw_w x raw_h
// when raw_w > 0. Returns once the call is over.
SessionResult RunSession(v1::Transcoder::Stub* stub, const DaemonBenchOptions& o, const std::vector<uint8_t>& input,
                         int raw_w, int raw_h);

}  // namespace conveyor::bench
