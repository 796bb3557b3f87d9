// How much memory a session may hold, estimated from its job and the bounds the daemon
// sets (the session queue, the output bound, the input queue), for admission by memory
// (limits.memory_budget_bytes; memory_budget.h keeps the running sessions' sum).
//
// The estimate is what the session's bounds let it hold, not what a well-behaved client
// makes it hold: a client that stops reading leaves session_output_bytes of output queued.
// It counts host memory only. A session decoding on the video engines holds device
// surfaces instead of some of its host frames (decode.held_frames bounds those on their
// way to the encoder, in GPU memory, which the estimate leaves out), but it is charged as
// if the CPU decoded, because it may move to the CPU decoder mid-stream.
#pragma once

#include <cstdint>
#include <string>

#include "job.h"

namespace conveyor {

struct SessionOptions;  // session.h

// The session's own threads' stacks as far as they are touched, its messages, the
// decoder's and the muxer's contexts and buffers.
inline constexpr uint64_t kSessionOverheadBytes = 8ull << 20;
// Each FFmpeg decode thread: its stack and its copy of the decoder context.
inline constexpr uint64_t kDecoderThreadBytes = 2ull << 20;
// Frames the decoder may keep as references: H.264's most (16).
inline constexpr int kDecoderReferenceFrames = 16;
// Decoded frames a container session's decode thread may hold ready ahead of its
// pipeline thread (DecodeHandOff).
inline constexpr int kDecodeAheadFrames = 3;
// FFmpeg's default probesize: container bytes the demuxer may read ahead while probing.
inline constexpr uint64_t kProbeBytes = 5000000;
// Container input's source size before it is known: admission charges a 1920x1080
// source (clamped to limits.max_width/max_height), and the session charges its real size
// once the decoder has probed it, before its first frame; a larger size that does not fit
// in the budget ends the session with RESOURCE_EXHAUSTED then (see MemoryBudget::Resize).
inline constexpr int kProvisionalWidth = 1920, kProvisionalHeight = 1080;

struct SessionMemoryEstimate {
  int width = 0, height = 0;  // the source size it assumes
  bool provisional = false;   // container input whose size is not known yet
  // Container bytes buffered (limits.input_queue_bytes) and the probe; or raw frames
  // queued for the session and its lane, with the worker, and being assembled.
  uint64_t input_bytes = 0;
  // Container input's decoded frames (8-bit 4:2:0, the format nearly all video decodes
  // to; a 10-bit or 4:4:4 source holds up to twice this): the decoder's references, one
  // per decode thread, the lane's, the worker's, and the deinterlace window's two; and a
  // storyboard's two sprites (the one being filled, the one being encoded).
  uint64_t frame_bytes = 0;
  // Encoded output not yet read (limits.session_output_bytes), the JPEGs of the frames
  // still in the lane or with the worker when that bound stops submission, and the
  // shared-memory JPEG slots.
  uint64_t output_bytes = 0;
  uint64_t overhead_bytes = 0;  // kSessionOverheadBytes and kDecoderThreadBytes a thread

  uint64_t total() const { return input_bytes + frame_bytes + output_bytes + overhead_bytes; }
  // "3840x2160" or "container input (1920x1080 until probed)", for messages.
  std::string Describe() const;
};

// FFmpeg's frame threads for workers.decode_threads `decode_threads`: as given, or for 0
// what FFmpeg picks on this host (cores + 1, at most 16).
int DecoderThreads(int decode_threads);

// The most bytes one JPEG of a width x height rendition is counted at: its yuv420p size
// at MCU-padded dimensions plus 4 KiB of headers. A JPEG at a quality a service uses is a
// fraction of that.
uint64_t JpegBytesBound(int width, int height);

// The estimate for `job` with a source of `source_width` x `source_height`, under
// `options` (its queue_frames, output_bytes, input_bytes, decode_threads and limits).
SessionMemoryEstimate EstimateSessionMemory(const Job& job, const SessionOptions& options, int source_width,
                                            int source_height);

// The estimate when the session is created: raw input at its declared size, container
// input at the provisional size (marked provisional).
SessionMemoryEstimate EstimateAtAdmission(const Job& job, const SessionOptions& options);

}  // namespace conveyor
