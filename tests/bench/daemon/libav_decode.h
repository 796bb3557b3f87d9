// The decode-only reference for conveyor-bench-daemon's container runs: N streams, each a
// thread with its own demuxer and decoder over the same file in memory, on libav* alone.
// `cuda` decodes on NVDEC as conveyord does (FFmpeg's cuda hwaccel on the device's primary
// context, frames left on the GPU, one decoder thread); `cpu` is FFmpeg's software decoder.
#pragma once

#include <cstdint>
#include <string>

#include "status.h"

namespace conveyor::bench {

struct LibavDecodeOptions {
  std::string input;
  int streams = 1;            // concurrent demux + decode threads, each reading the whole file
  std::string decoder = "cpu";  // cuda | cpu
  int threads = 0;            // cpu: the decoder's thread_count (0: FFmpeg's choice); cuda takes 1
  int device = 0;             // cuda: the CUDA device
  // cuda: one device (the primary context) for every stream, as conveyord's worker serves
  // all its sessions, or a device with its own CUDA context for each stream.
  bool context_per_stream = false;
  // Churn (churn_seconds > 0): for that long, each stream closes its decoder after
  // frames_per_open frames and opens the next from the file's start, and a releaser
  // thread frees every frame hold_ms after it came, often after its decoder has closed:
  // how conveyord's sessions start, end and are cancelled while the GPU worker still holds
  // their frames, compressed into seconds. A decoder or driver that cannot take it crashes
  // the process. `discipline` (cuda): "daemon" is conveyord's (decoder_lifecycle.h: frames
  // freed on the device's lifecycle thread through DeviceFrameOwner, a decoder created, up
  // to its first get_format, under HwDecodeDevice::BeginDecoderCreation, and a closed one
  // retired to that thread), "plain" FFmpeg's usual use (frames freed on the releaser, no
  // lock).
  double churn_seconds = 0;
  int frames_per_open = 8;
  double hold_ms = 5;
  std::string discipline = "daemon";
};

struct LibavDecodeResult {
  uint64_t frames = 0;       // decoded frames over every stream
  double seconds = 0;        // from starting the streams to the last one's end
  double cpu_seconds = 0;    // getrusage(RUSAGE_SELF) user + system over the same span
  int width = 0, height = 0;
  std::string decoder;       // FFmpeg's decoder, where it ran and its threads, for the log
  uint64_t opens = 0;             // churn: decoders opened and closed
  uint64_t outlived_decoder = 0;  // churn: frames freed after their decoder had closed
};

// INVALID_ARGUMENT for bad options or an input without video; UNAVAILABLE when the CUDA
// device cannot be opened; FAILED_PRECONDITION when a `cuda` stream's decoder did not take
// the device format (its frames would come from the CPU).
StatusOr<LibavDecodeResult> DecodeStreams(const LibavDecodeOptions& options);

}  // namespace conveyor::bench
