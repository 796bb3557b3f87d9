// ContainerDecoder: demuxes a container that arrives as a byte stream (a ByteQueue the rpc
// layer fills) and decodes its best video stream into frames with their timing and colour
// metadata; optionally hands the best audio stream's packets on untouched, for muxing.
// The input is read once, front to back: it is never seekable.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "byte_queue.h"
#include "demux_errors.h"
#include "display_orientation.h"
#include "ffmpeg_handles.h"
#include "frame_convert.h"
#include "hw_decode.h"
#include "input_spool.h"
#include "mp4_box_scanner.h"
#include "status.h"

namespace conveyor::media {

// What a non-faststart MP4/MOV (moov after mdat) is refused with (FAILED_PRECONDITION)
// when the client cannot seek and the daemon has no spool for it.
inline constexpr const char* kMoovAtEndAdvice =
    "moov atom at end; send the input with ContainerInput.seekable, remux with -movflags faststart, or enable "
    "limits.input_spool_bytes";

// A client that sends any range of its input on request (ContainerInput.seekable): the
// decoder's seeks become requests. The input queue is then positioned (ByteQueue::TryPushAt).
struct RandomAccess {
  bool enabled = false;
  uint64_t size = 0;  // the input's length, 0 when the client does not know it
  // Sends the client a request for the input from `offset` on, answered as `generation`.
  std::function<void(uint64_t generation, uint64_t offset)> request;
  // A forward seek at most this far is done by reading what streams in anyway.
  uint64_t forward_read_bytes = 1 << 20;
};

// The video codecs the daemon accepts by default. Anything else is refused before a
// decoder is opened (a smaller attack surface for client-supplied bytes).
std::vector<AVCodecID> DefaultVideoCodecs();
// The demuxers it accepts by default (format_whitelist): MP4/MOV, Matroska/WebM, AVI,
// MPEG-TS/PS, and raw H.264, HEVC, MPEG-2, MJPEG, IVF (VP9, AV1) and AV1 OBU streams.
std::string DefaultInputFormats();

struct DecoderOptions {
  std::string format;  // demuxer to use instead of probing (av_find_input_format name, "matroska", "mpegts")
  int threads = 0;     // decoder threads, frame + slice; 0 lets FFmpeg pick from the core count
  bool audio = false;  // also select the best audio stream and pass its packets to the audio sink
  std::vector<AVCodecID> video_codecs = DefaultVideoCodecs();  // accepted; empty accepts any
  std::string input_formats = DefaultInputFormats();  // accepted demuxers, comma-separated; "" accepts any
  int avio_buffer_bytes = 64 * 1024;                  // the AVIOContext's read buffer
  // Probing bounds, 0 for FFmpeg's defaults (5 MB, 5 s). avformat_find_stream_info holds
  // the packets it reads in memory, so probe_bytes bounds that memory too.
  int64_t probe_bytes = 0;
  int64_t analyze_us = 0;
  // Largest picture accepted, in pixels (0: FFmpeg's own bound, about 268 M). Enforced
  // before FFmpeg allocates one: while probing, when the decoder opens and on every
  // frame, so a header claiming 100000x100000 (or 16000x16000) costs nothing.
  int64_t max_pixels = 0;
  UntaggedMatrix untagged_matrix = UntaggedMatrix::kBt601;  // for DecodedFrame::color
  // false (the default, as the ffmpeg CLI): a packet the decoder refuses is counted and
  // skipped, and a read error or a cut-off end ends the input with the frames decoded so
  // far (InputDamage says what happened). true: the first such error fails Next().
  bool strict = false;
  RandomAccess random_access;
  // A client that cannot seek, with an MP4 whose moov follows mdat: its input is spooled
  // to a private file in spool_directory, at most spool_bytes (0: no spool, the input
  // is refused with kMoovAtEndAdvice).
  std::string spool_directory = "/var/tmp";
  uint64_t spool_bytes = 0;
  // Hardware decoding (hw_decode.h): the device the video decoder is offered. FFmpeg
  // takes it for a stream its hwaccel supports; otherwise the stream decodes on the CPU
  // and VideoStreamInfo::decode_note says why, unless `hw_required`: then the input is
  // refused (FAILED_PRECONDITION).
  std::shared_ptr<HwDecodeDevice> hw_device;
  bool hw_required = false;
  // kDevice: frames stay in device memory (DecodedFrame::frame a hardware frame); kHost:
  // each is transferred to host memory (NV12 or P010) before Next() returns it.
  DecodedFrames hw_frames = DecodedFrames::kDevice;
  // Device frames the caller may hold at once (SurfaceGate's bound): the decoder gets as
  // many surfaces beyond its own.
  int hw_held_frames = kDefaultHeldDeviceFrames;
  // The gate that counts the caller's device frames of this decoder (may be null): a
  // closed hardware decoder is torn down once it holds none (HwDecodeDevice::Retire).
  std::shared_ptr<SurfaceGate> hw_surfaces;
  // For tests of the failover: the engines' decode of this video packet (0-based) counts as
  // failed, as an error of the hwaccel would. -1: never.
  int64_t hw_fault_at_packet = -1;
  // The decoder discards every frame but keyframes (skip_frame = AVDISCARD_NONKEY), on the
  // CPU and on the video engines alike (demux_decoder_hw.cpp says why).
  bool keyframes_only = false;
};

// What a damaged input cost, as far as the decoder could tell (strict off).
struct InputDamage {
  // Errors FFmpeg reported on the input: the demuxer's (damage it skipped, corrupt video
  // packets) and the video decoder's (packets it refused, frames it could not finish,
  // frames it delivered with concealed damage: AVFrame::decode_error_flags).
  int64_t decode_errors = 0;
  // The input ended early: a read error, a packet cut short at the end, or fewer video
  // packets than the container's index lists.
  bool truncated = false;
  std::string first_error;  // the first error's text, for the session's one log line
};

struct VideoStreamInfo {
  int index = -1;
  std::string container;  // demuxer name, e.g. "matroska,webm"
  std::string codec;      // e.g. "h264"
  std::string decoder;    // e.g. "h264", "libdav1d"
  int width = 0;
  int height = 0;
  AVPixelFormat pix_fmt = AV_PIX_FMT_NONE;  // as the stream declares it
  AVRational time_base{0, 1};               // of every pts this decoder reports
  AVRational frame_rate{0, 1};              // best guess; {0,1} when unknown
  AVRational sample_aspect{0, 1};           // {0,1} when unknown
  int rotation_degrees = 0;                 // clockwise rotation to apply for display: 0, 90, 180 or 270
  int64_t start_pts = AV_NOPTS_VALUE;       // the stream's start_time: no frame is before it
  int64_t duration = 0;                     // in time_base, the stream's or else the container's; 0: not known
  int64_t frame_count = 0;                  // as the container records it; 0: not known
  // The turn and mirror of the stream's display matrix, as the ffmpeg CLI's autorotate
  // applies it (display_orientation.h); odd_rotation: an angle it rotates by that is not
  // a multiple of 90 degrees (orientation identity then).
  Orientation orientation;
  bool odd_rotation = false;
  AVFieldOrder field_order = AV_FIELD_UNKNOWN;  // as the container or codec says
  // The video engines decode it (DecoderOptions::hw_device), through FFmpeg's `hw_api`
  // hwaccel ("cuda", "vaapi"); decode_note: why the CPU does, when a device was offered.
  bool hw_decoding = false;
  std::string hw_api;
  std::string decode_note;
};

struct AudioStreamInfo {
  int index = -1;
  std::string codec;
  const AVCodecParameters* codecpar = nullptr;  // owned by the decoder; for the muxer to copy
  AVRational time_base{0, 1};                   // of the packets handed to the audio sink
};

struct DecodedFrame {
  // The decoder's picture (reference-counted). Next() decodes into it again; to keep a
  // picture past that, move `frame` out and Next() allocates a new one.
  FramePtr frame;
  int64_t pts = AV_NOPTS_VALUE;  // best-effort presentation time, in time_base units
  AVRational time_base{0, 1};
  int64_t number = 0;  // 0, 1, 2, ... in output order
  int width = 0;
  int height = 0;
  AVPixelFormat format = AV_PIX_FMT_NONE;
  FrameColor color;
  AVRational sample_aspect{0, 1};
  int rotation_degrees = 0;  // clockwise, from the frame's display matrix or else the stream's
  // The decoder's field flags: the picture holds two fields, and which is the first.
  bool interlaced = false;
  bool top_field_first = false;

  double seconds() const;  // pts in seconds (NaN without a pts)
};

class ContainerDecoder {
 public:
  // Called with each packet of the selected audio stream, in demux order, pts and dts in
  // AudioStreamInfo::time_base. A non-OK return stops decoding with that status.
  using AudioSink = std::function<Status(const AVPacket& packet)>;

  // Reads from `input` until the container header and enough of the streams are known
  // (blocking on the queue), then opens the video decoder. `input` must outlive the
  // decoder. On an error the producer may be blocked on a full queue: cancel the queue.
  static StatusOr<std::unique_ptr<ContainerDecoder>> Open(ByteQueue* input, const DecoderOptions& options);

  ContainerDecoder(const ContainerDecoder&) = delete;
  ContainerDecoder& operator=(const ContainerDecoder&) = delete;
  ~ContainerDecoder();

  const VideoStreamInfo& video() const { return video_; }
  const AudioStreamInfo* audio() const { return audio_ ? &*audio_ : nullptr; }
  void SetAudioSink(AudioSink sink) { audio_sink_ = std::move(sink); }

  // Decodes the next frame into *out: true with a frame, false at the end of the stream
  // (the decoder has been drained: every frame was delivered). CANCELLED when the queue
  // was cancelled; other errors carry the FFmpeg call and its error text.
  StatusOr<bool> Next(DecodedFrame* out);

  int64_t frames_decoded() const { return frames_; }
  // Whether SeekBefore can move in the input: a client that sends any range of it
  // (RandomAccess) or an input spooled to a file. A streamed input cannot.
  bool can_seek() const { return options_.random_access.enabled || spool_ != nullptr; }
  // demux_decoder_seek.cpp: moves the demuxer to the video keyframe at or before `pts`
  // (in video().time_base; av_seek_frame with AVSEEK_FLAG_BACKWARD) and empties the
  // decoder, so the next Next() decodes from there. The container's index decides which
  // keyframe: one indexed by dts can lie after `pts` in presentation order, which the
  // caller sees in the first frame's pts and answers with an earlier target. Not while a
  // move to software is under way. The end-of-input packet count check is off afterwards.
  Status SeekBefore(int64_t pts);
  // The last resort when SeekBefore keeps landing past the time asked for (MPEG-TS seeks
  // by a search over dts that can miss a GOP): back to byte 0, to decode from the start.
  // FAILED_PRECONDITION for a demuxer that cannot seek by byte (those seek by an index).
  Status SeekToStart();
  // Moves decoding to a software decoder at the next keyframe without losing a frame: the
  // current decoder is drained of every frame before that keyframe, then a software
  // decoder (with its threads) starts at it; hw_failover() then says so, with `why`. For
  // the decoding thread, between Next() calls; on a software decoder it starts a fresh
  // one the same way. An open GOP's leading pictures after that keyframe, which refer to
  // pictures before it, are lost, as for any decoder that starts there.
  void MoveToSoftwareAtNextKeyframe(std::string why);
  // The video engines gave the stream up mid-stream: a hwaccel error (the CPU decodes from
  // the next keyframe; the packets skipped count as decode errors) or a format they do not
  // take (FFmpeg's get_format moved to software). Empty while they decode, or never did.
  const std::string& hw_failover() const { return hw_failover_; }
  enum class GiveUp { kNone, kError, kFormat, kMoved };  // why hw_failover() is set
  GiveUp hw_give_up() const { return hw_give_up_; }
  uint64_t seek_requests() const { return seek_requests_; }
  uint64_t spooled_bytes() const { return spool_ ? spool_->bytes() : 0; }
  InputDamage damage() const;
  // Seconds spent in av_read_frame so far: demuxing, and waiting for input to arrive.
  double demux_seconds() const { return demux_seconds_; }
  // Seconds Open spent settling hardware decoding: feeding the first packets until the
  // decoder asked for its format, the hardware decoder's creation (FFmpeg's hwaccel init)
  // included. 0 without hardware decoding offered.
  double settle_seconds() const { return settle_seconds_; }
  // Seconds spent so far waiting for the hardware decode device's lifecycle lock
  // (DecoderLifecycle::BeginCreation): behind another decoder's creation or teardown, or
  // the freeing of frames. After Open, what settling waited.
  double device_wait_seconds() const { return device_wait_seconds_; }
  // Closes the video decoder now rather than at destruction (a hardware one is retired to
  // its device's lifecycle thread); Next() must not be called afterwards.
  void Close() { CloseCodec(); }

 private:
  ContainerDecoder(ByteQueue* input, const DecoderOptions& options);
  Status OpenInput();
  Status CheckPictureSizes() const;
  Status OpenVideoDecoder();
  Status OpenCodec(const AVCodec* decoder, const AVStream* st, bool hardware);
  // Frees the codec context; a hardware one is retired to the device's lifecycle thread
  // (HwDecodeDevice::Retire), with hw_surfaces.
  void CloseCodec();
  // The device's lifecycle lock for a decoder's creation, its wait counted in
  // device_wait_seconds_.
  DecoderLifecycle::Creation BeginCreation();
  // avcodec_send_packet and avcodec_receive_frame on codec_; on a hardware decoder that has
  // not asked for its format yet, under the lifecycle lock, since FFmpeg's hwaccel creates
  // the engines' decoder at that first get_format.
  int SendToCodec(const AVPacket* packet);
  int ReceiveFromCodec(AVFrame* frame);
  // demux_decoder_hw.cpp: whether to offer the device to `decoder` (an error when it is
  // required and the decoder cannot take it), and, once offered, feeding packets until
  // FFmpeg has taken or refused it; on a refusal the decoder is opened again in software
  // and the packets are sent again.
  StatusOr<bool> OfferHardware(const AVCodec* decoder);
  Status SettleHardware();
  // Whether `err`, met while the engines decode, is theirs rather than the stream's (a
  // damaged bitstream is INVALIDDATA whichever decoder reads it).
  bool EngineFailure(int err) const;
  // After an engine failure: FAILED over to a software decoder that starts at the next
  // keyframe, or, when the engines are required, UNAVAILABLE.
  Status FailOver(const std::string& what);
  // MoveToSoftwareAtNextKeyframe in two halves: at the keyframe (held, the old decoder
  // drained), and once the old decoder has given its last frame.
  Status StartMove(AVPacket* keyframe);
  Status FinishMove();
  // A frame just received: a hardware frame brought to host memory under kHost (false:
  // the transfer failed, and the decoder failed over), a software one after hardware
  // frames noted (NoteSoftwareFrames).
  StatusOr<bool> PlaceFrame(DecodedFrame* out);
  // A frame came out of software after hardware frames (get_format moved to software):
  // noted, or, when the engines are required, FAILED_PRECONDITION.
  Status NoteSoftwareFrames(int64_t frame_number);
  Status FlushPendingAudio();
  // demux_decoder_seek.cpp: the decoder emptied and the end checks reset after a seek.
  void AfterSeek();
  Status FeedDecoder();
  Status Drain();
  Status CheckWholeInput(bool error_at_end);
  Status Failure(int err, const char* call) const;
  // A decode error, counted (strict off) or returned (strict on).
  Status DecodeError(int err, const char* call);
  // The demuxer stopped on `err` (not a clean EOF): strict fails, else the input ends here.
  Status EndOfReadableInput(int err, const char* call);
  void Remember(const std::string& what);
  void FillFrame(DecodedFrame* out);

  static int ReadCallback(void* opaque, uint8_t* buf, int size);
  static int64_t SeekCallback(void* opaque, int64_t offset, int whence);
  // Once the scanner sees mdat first: seek by request, spool, or refuse.
  int OnMdatFirst();
  int ReadSpooled(uint8_t* buf, int size);
  int64_t Seek(int64_t offset);
  int64_t SeekSpooled(int64_t offset);
  int64_t SeekByRequest(int64_t offset);

  ByteQueue* const input_;
  const DecoderOptions options_;
  Mp4BoxScanner scanner_;
  bool moov_at_end_ = false;  // refused: mdat first, and no way to seek
  // The bytes read while the scanner decides, kept for a spool (at most kMaxPrefixBytes).
  static constexpr size_t kMaxPrefixBytes = 1 << 20;
  std::vector<uint8_t> prefix_;
  bool prefix_kept_ = true;
  std::unique_ptr<InputSpool> spool_;
  uint64_t spool_pos_ = 0;  // where the demuxer reads the spool
  Status io_failure_;       // why a read or seek callback failed (a spool past its bound, ...)
  uint64_t seek_requests_ = 0;

  // Destroyed in reverse order: the format context closes before its AVIOContext.
  AvioContextPtr avio_;
  InputFormatPtr format_;
  CodecContextPtr codec_;
  PacketPtr packet_;
  const AVCodec* video_codec_ = nullptr;  // the video decoder, to open again in software
  bool hw_offered_ = false;
  HwDecodeState hw_state_;  // the codec context's opaque while the device is offered
  std::vector<PacketPtr>* keep_sent_ = nullptr;  // SettleHardware: video packets sent, kept
  bool hw_frames_seen_ = false;  // a frame came out of the engines
  std::string hw_failover_;
  GiveUp hw_give_up_ = GiveUp::kNone;
  bool resync_ = false;  // after a failover: video packets are skipped up to a keyframe
  std::string move_why_;  // a move to software is asked for (MoveToSoftwareAtNextKeyframe)
  bool moving_ = false;   // the old decoder is being drained; held_keyframe_ goes to the new one
  PacketPtr held_keyframe_;
  static constexpr size_t kMaxPendingAudio = 1024;
  std::vector<PacketPtr> pending_audio_;  // audio read before SetAudioSink

  VideoStreamInfo video_;
  std::optional<AudioStreamInfo> audio_;
  AudioSink audio_sink_;
  int stream_rotation_ = 0;
  bool draining_ = false;
  bool finished_ = false;
  bool sought_ = false;  // SeekBefore ran: video_packets_ no longer counts the whole stream
  int64_t frames_ = 0;
  int64_t video_packets_ = 0;
  double demux_seconds_ = 0;
  double settle_seconds_ = 0;
  double device_wait_seconds_ = 0;
  static constexpr int kMaxReceiveErrorsInARow = 1000;
  int receive_errors_in_a_row_ = 0;
  bool last_packet_cut_ = false;  // the last video packet read was cut short (AV_PKT_FLAG_CORRUPT at the end)
  InputDamage damage_;        // the decoder's part and truncation
  DemuxErrors demux_errors_;  // the demuxer's logged errors, counted while Open/Next run
  // Strict: the demuxer's first logged error fails the input.
  Status CheckStrictDemux() const;
};

}  // namespace conveyor::media
