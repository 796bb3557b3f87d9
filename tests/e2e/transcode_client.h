// A test client for the Transcode stream: sends a JobSpec and input on a writer thread
// (as a real client would, under gRPC flow control) and gathers every response.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "conveyor/v1/transcoder.grpc.pb.h"

namespace conveyor::e2e {

using TranscodeStream = grpc::ClientReaderWriter<v1::TranscodeRequest, v1::TranscodeResponse>;

struct TranscodeOutcome {
  grpc::Status status;
  bool started = false;
  v1::Started started_msg;
  // Per rendition: whole JPEG frames (OutputPacket parts joined) and their pts.
  std::map<uint32_t, std::vector<std::vector<uint8_t>>> frames;
  std::map<uint32_t, std::vector<int64_t>> pts;
  std::map<uint32_t, std::vector<uint8_t>> containers;  // ContainerChunk bytes joined
  int progress_messages = 0;
  int shared_packets = 0;  // OutputPackets whose JPEG was in a shared-memory slot
  bool summary_seen = false;
  v1::Summary summary;
  size_t largest_message = 0;
};

struct TranscodeCall {
  v1::JobSpec spec;
  // Sends the input after the spec; return false to stop writing without half-closing
  // (the test then cancels or lets the server time out).
  std::function<bool(TranscodeStream*)> send_input;
  double deadline_s = 60;
  // Called after each response is read; may cancel `context`.
  std::function<void(const v1::TranscodeResponse&, grpc::ClientContext*)> on_response;
  bool half_close = true;
  // Shared-memory output: the JPEG an OutputPacket.shared names, read before on_response
  // sees the packet (which may then release the slot).
  std::function<std::vector<uint8_t>(const v1::SharedJpeg&)> read_shared;
};

TranscodeOutcome RunTranscode(v1::Transcoder::Stub* stub, const TranscodeCall& call);

// A raw yuv420p job of width x height at 30 frames/s, BT.709, frames in shared memory
// when `shared_memory_slots` > 0; no renditions yet.
v1::JobSpec RawYuv420pSpec(int width, int height, uint32_t shared_memory_slots = 0);

// Sends a file's bytes as container_chunk messages of `chunk` bytes.
bool SendFileChunks(TranscodeStream* stream, const std::string& path, size_t chunk = 1 << 20);

// Sends one raw frame as frame_chunk messages of at most `chunk` bytes.
bool SendRawFrame(TranscodeStream* stream, const std::vector<uint8_t>& bytes, int64_t pts, size_t chunk = 1 << 20);

struct HealthCheckOutcome {
  grpc::Status status;
  // The serialized grpc.health.v1.HealthCheckResponse: {status: SERVING} is 08 01.
  std::string reply;
};

// Calls grpc.health.v1.Health/Check for `service` ("": the whole server) through a generic
// stub, so the tests need no generated code for the health proto.
HealthCheckOutcome CheckHealth(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                               double deadline_s = 10);

}  // namespace conveyor::e2e
