// ContainerMuxer: wraps the encoder's JPEG frames (and, optionally, the input's audio
// packets, untouched) into Matroska, MOV or AVI, written through a write-only AVIOContext
// whose bytes go to a caller's sink as they are produced, i.e. straight back to a client.
// Live output goes front to back, which shapes each container (see ContainerFormat). A
// client that writes a file it can seek in takes seekable output instead (OpenAt):
// the bytes come with their offset, and the muxer goes back to finish what it needs to,
// as when the ffmpeg CLI writes a file: Matroska's duration, cues and seek head, a plain
// MOV (one mdat, and moov after it or, with faststart, before it), AVI's idx1 index and
// frame counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ffmpeg_handles.h"
#include "stage_orient.h"
#include "status.h"

namespace conveyor::media {

enum class ContainerFormat : uint8_t {
  // Matroska: written live (no cues, no duration in the header; clusters as they close).
  kMatroska,
  // Live MOV is fragmented: movflags frag_keyframe+empty_moov+default_base_moof. A plain MOV
  // needs to seek back to write moov; a fragmented one starts with an empty moov and then
  // one moof+mdat per fragment. Every JPEG frame is a keyframe, so each frame is a fragment
  // (about 100 bytes of moof per frame) and reaches the sink as soon as the next frame is
  // written. Carries the display rotation (tkhd matrix).
  kMov,
  // AVI: no idx1 index and the header's frame counts left at zero (both need a seek);
  // readers that read it front to back (FFmpeg, most players) play it. AVI has one
  // constant frame rate: MuxerOptions::frame_rate is required and every pts is rounded to
  // a whole frame of it (a collision moves the later frame one frame on).
  kAvi,
};
const char* ContainerFormatName(ContainerFormat f);

struct MuxerOptions {
  ContainerFormat format = ContainerFormat::kMatroska;
  int width = 0;  // of the JPEG frames; required
  int height = 0;
  AVRational time_base{1, 1000};  // of the pts given to WriteVideo
  AVRational frame_rate{0, 1};    // nominal rate; required for AVI, a hint elsewhere
  // The frames' turn and mirror for display, written as a display matrix where the
  // container holds one (MOV); Matroska and AVI in FFmpeg 5.1 cannot store it.
  Orientation orientation;
  // The frames' field order as the container says it (Matroska's FieldOrder, MOV's fiel):
  // AV_FIELD_PROGRESSIVE for deinterlaced frames, the source's for frames kept interlaced.
  AVFieldOrder field_order = AV_FIELD_UNKNOWN;
  // Optional audio passthrough: a stream copied from these parameters (the decoder's
  // AudioStreamInfo), whose packets WriteAudio takes in audio_time_base.
  const AVCodecParameters* audio = nullptr;
  AVRational audio_time_base{0, 1};
  // Seekable MOV only: moov goes before mdat, as with the ffmpeg CLI's -movflags
  // +faststart, so a player can start before it has the whole file. Finish inserts the
  // moov after ftyp (OpenAt's InsertSink): the writer of the file moves its bytes, where
  // FFmpeg reads its own file back and writes it again.
  bool faststart = false;
  int avio_buffer_bytes = 64 * 1024;  // bytes gathered before the sink is called, at most
};

class ContainerMuxer {
 public:
  // Receives the container's bytes in order. A non-OK return fails the write that
  // produced them, and every later one.
  using Sink = std::function<Status(const uint8_t* data, size_t size)>;
  // Receives bytes to be written at `offset` of the file: mostly where the last ended,
  // sometimes back over bytes already written (a header, a size field).
  using OffsetSink = std::function<Status(uint64_t offset, const uint8_t* data, size_t size)>;
  // Inserts `data` at `offset`: the file's bytes from offset to its end move on by size.
  // Only faststart asks for it, once, last.
  using InsertSink = std::function<Status(uint64_t offset, const uint8_t* data, size_t size)>;

  // Writes the container header (to the sink, possibly on the first frame's flush).
  static StatusOr<std::unique_ptr<ContainerMuxer>> Open(const MuxerOptions& options, Sink sink);
  // The same with each write's offset. `seekable`: the sink writes a file it can seek in,
  // and gets the container as the ffmpeg CLI writes one; otherwise live output, whose
  // offsets always follow on. `insert` is required with options.faststart.
  static StatusOr<std::unique_ptr<ContainerMuxer>> OpenAt(const MuxerOptions& options, OffsetSink sink,
                                                          bool seekable, InsertSink insert = nullptr);

  ContainerMuxer(const ContainerMuxer&) = delete;
  ContainerMuxer& operator=(const ContainerMuxer&) = delete;
  ~ContainerMuxer();

  // One JPEG frame with its pts in MuxerOptions::time_base (monotonic, as decoded frames
  // come out). duration 0 lets the muxer infer it from the next frame. The bytes are
  // copied only when audio is interleaved.
  Status WriteVideo(const uint8_t* jpeg, size_t size, int64_t pts, int64_t duration = 0);
  // One packet of the passthrough audio stream, timestamps in audio_time_base.
  Status WriteAudio(const AVPacket& packet);
  // Writes the trailer and flushes everything to the sink. Nothing may be written after.
  Status Finish();

  uint64_t bytes_written() const { return bytes_written_; }

 private:
  ContainerMuxer(const MuxerOptions& options, OffsetSink sink, bool seekable, InsertSink insert);
  Status Init();
  Status Give(const uint8_t* data, size_t size);
  Status MoveMoovToTheFront();
  Status Write(AVPacket* packet, const char* call);
  Status Failure(int err, const char* call) const;
  static int WriteCallback(void* opaque, uint8_t* buf, int size);
  static int64_t SeekCallback(void* opaque, int64_t offset, int whence);

  const MuxerOptions options_;
  OffsetSink sink_;
  const bool seekable_;
  InsertSink insert_;
  Status sink_status_;
  uint64_t bytes_written_ = 0;  // all the sink was given, rewrites included
  uint64_t position_ = 0;       // where the next write goes
  uint64_t size_ = 0;           // the file's size: the furthest any write reached
  // faststart: the file's first box header (ftyp's size), and the trailer's moov, kept
  // here instead of going to the sink from moov_at_ on.
  uint8_t head_[8] = {};
  size_t head_len_ = 0;
  uint64_t moov_at_ = UINT64_MAX;
  std::vector<uint8_t> moov_;

  AvioContextPtr avio_;  // declared first: freed after the format context
  OutputFormatPtr format_;
  PacketPtr packet_;
  AVStream* video_ = nullptr;
  AVStream* audio_ = nullptr;
  int64_t last_video_dts_ = AV_NOPTS_VALUE;
  bool finished_ = false;
};

}  // namespace conveyor::media
