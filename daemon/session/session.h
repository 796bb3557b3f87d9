// One Transcode stream's pipeline, between the rpc reactor and the scheduler:
//   container bytes -> ByteQueue -> ContainerDecoder -> FrameConverter ┐
//   raw frame chunks -> RawFrames queue ───────────────────────────────┴-> Lane (worker)
//   worker on_done -> output queue -> output thread: JPEG packets or ContainerMuxer
//   chunks -> SessionSink (the reactor)
// Input is bounded (the byte queue, the raw frame queue, the lane) and so is output
// (the session stops submitting while too many encoded bytes wait for the client), so a
// session holds at most queue frames x frame size plus the output bound.
// Session's members are defined by part: session.cpp (lifecycle), session_container_input.cpp,
// session_raw_input.cpp (frame chunks and shared-memory frames) and session_output.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "assembly_ring_pool.h"
#include "byte_queue.h"
#include "decode_balancer.h"
#include "decode_hand_off.h"
#include "conveyor/v1/transcoder.pb.h"
#include "display_orientation.h"
#include "frame_assembly_ring.h"
#include "frame_convert.h"
#include "frame_rate_sampler.h"
#include "hw_decode.h"
#include "job.h"
#include "muxer.h"
#include "scheduler.h"
#include "session_memory.h"
#include "session_meter.h"
#include "shared_frames.h"
#include "shared_jpegs.h"
#include "status.h"
#include "storyboard_layout.h"

namespace conveyor::media {
class ContainerDecoder;
struct VideoStreamInfo;
}

namespace conveyor {

// Bytes of client data a response carries (what output backpressure counts).
inline size_t PayloadBytes(const v1::TranscodeResponse& r) {
  if (r.has_packet()) return r.packet().data().size();
  if (r.has_container_chunk()) return r.container_chunk().data().size();
  return 0;
}

// Where a session's responses go: the reactor. Calls never block.
class SessionSink {
 public:
  virtual ~SessionSink() = default;
  virtual void Send(v1::TranscodeResponse response) = 0;
  // Ends the stream with `status` once every message sent before has been written.
  virtual void Close(Status status) = 0;
  // The session has room for more input again (after a refused TryPush*). Called on the
  // session's threads with its locks held, so it only schedules: the refused message is
  // offered again, and the next read started, on another thread, never inside this call.
  virtual void ResumeReading() = 0;
  // Ends the stream now, dropping what is not written yet: for a client that stopped
  // reading after the session had ended.
  virtual void Abort() = 0;
};

struct SessionOptions {
  JobLimits limits;
  int queue_frames = 4;             // lane capacity: decoded frames waiting for the worker
  size_t output_bytes = 64 << 20;   // encoded bytes queued for the client before pausing
  size_t input_bytes = 16 << 20;    // container bytes buffered
  uint64_t max_input_bytes = 64ull << 30;
  int decode_threads = 0;
  std::string spool_directory = "/var/tmp";  // where inputs that need seeking are spooled
  uint64_t spool_bytes = 4ull << 30;         // per session; 0: no spool
  media::UntaggedMatrix untagged_matrix = media::UntaggedMatrix::kBt601;  // container input without a matrix
  // decode.mode: where container input decodes, unless the job says (JobSpec.decode);
  // decode.frames: where hardware-decoded frames go to the encoder (device memory where
  // the device allows, or host memory: media::DecodedFrames).
  media::DecodeMode decode = media::DecodeMode::kAuto;
  media::DecodedFrames decoded_frames = media::DecodedFrames::kDevice;
  int held_device_frames = media::kDefaultHeldDeviceFrames;  // decode.held_frames
  int engines_full_percent = 90;  // decode.engines_full_percent: auto's engines-are-full share
  std::string vaapi_device;  // decode.vaapi_device: "" finds the GPU's render node
  int64_t decode_fault_at_packet = -1;  // decode.fault_at_packet (tests of the failover)
  size_t message_bytes = 1 << 20;   // largest data field in one response
  const SessionMetricsContext* metrics = nullptr;  // none: count nothing
  // Registered memory for frames that arrive in frame_chunk messages, across sessions
  // (frame_assembly_ring.h): the SessionManager's pool of rings, which it sets when the
  // worker gains from it (a GPU); its budget is pinned_input_bytes. Null: ordinary memory.
  uint64_t pinned_input_bytes = 1ull << 30;
  std::shared_ptr<AssemblyRingPool> pinned_input;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  // `owner`: who started the session (the rpc layer's caller identity; "" without token
  // auth). Fixed at construction so List and Cancel never see a session without one.
  Session(std::string id, std::string owner, Job job, SessionOptions options, std::shared_ptr<Lane> lane,
          std::string worker_name, WorkerInfo worker);
  ~Session();

  // Starts the pipeline thread; responses go to `sink` until DetachSink().
  void Start(SessionSink* sink);
  void DetachSink();

  // Input from the reactor. False: no room now; ResumeReading() follows when there is.
  // A non-OK status ends the session (bad data), already sent to the sink.
  StatusOr<bool> TryPushContainerBytes(std::vector<uint8_t>& chunk);
  // Seekable input: `range` (its data moved into `data`).
  StatusOr<bool> TryPushContainerRange(const v1::ContainerRange& range, std::vector<uint8_t>& data);
  // Seekable input: the ReadRequest not yet answered with a byte ("" when none), for the
  // reaper's idle-timeout status.
  std::string UnansweredRequest() const;
  StatusOr<bool> TryPushFrameChunk(const v1::RawFrameChunk& chunk);
  StatusOr<bool> TryPushSharedFrame(const v1::SharedFrame& frame);
  void EndOfInput();

  // Shared memory (shared_frames.h for input, shared_jpegs.h for output), for a job with
  // raw.shared_memory_slots or output.frames.shared_memory_slots: where the client
  // attaches, and the key that names this session there. Set once, before Start();
  // Started carries them.
  void EnableSharedMemory(std::string attach_socket, std::string attach_key);
  // The video engines of the session's worker (SessionManager opens one device per GPU
  // worker), or none and why (`why_none`, for a job that asks for them). Set once,
  // before Start().
  // `balancer` (may be null) places `auto` sessions of worker `worker` between its video
  // engines and the CPU, and may move this one to the CPU mid-stream.
  void SetDecodeDevice(std::shared_ptr<media::HwDecodeDevice> device, std::string why_none,
                       std::shared_ptr<DecodeBalancer> balancer = nullptr, int worker = 0);
  // Container input: `check` charges the session's memory estimate at the size the
  // decoder probed (the session manager's MemoryBudget::Resize); its error ends the
  // session before Started. Set once, before Start().
  void SetMemoryCheck(std::function<Status(const SessionMemoryEstimate&)> check) { memory_check_ = std::move(check); }
  const std::string& attach_key() const { return attach_key_; }
  // The attach, once per session: `input_fd` is the client's memfd of frame slots (-1:
  // none came; the caller keeps and closes it). Returns the descriptor of the JPEG slots
  // to hand back (a duplicate, the caller's to close), or none when the job has none.
  // FAILED_PRECONDITION when the session takes no shared memory, is attached already, or
  // the memfd is missing or unfit.
  StatusOr<UniqueFd> AttachSharedMemory(int input_fd);
  // The client's OutputSlotReleased; INVALID_ARGUMENT (the session ends) for a slot that
  // holds no JPEG sent to it.
  Status ReleaseOutputSlot(uint32_t slot);
  // Stops the session: queued frames are dropped, the stream ends with `status`.
  void Cancel(Status status);

  // Aborts the stream (SessionSink::Abort) if it is still open: the reaper calls this for
  // a session that has ended but whose client has not read its last responses.
  void AbortStream();

  // The reactor wrote a response carrying `bytes` of payload (PayloadBytes) to the client.
  void OnSent(size_t bytes);

  const std::string& id() const { return id_; }
  const std::string& label() const { return job_.label; }
  const std::string& worker_name() const { return worker_name_; }
  const std::string& owner() const { return owner_; }
  std::chrono::system_clock::time_point started_at() const { return started_wall_; }
  uint64_t frames_in() const { return frames_in_.load(); }
  uint64_t frames_out() const { return frames_out_.load(); }
  int queue_depth() const { return lane_->queued(); }
  bool finished() const { return finished_.load(); }
  // Seconds since input was last accepted, output last written or a frame last finished.
  double IdleSeconds() const;
  // Whether encoded bytes handed to the client's stream are still unwritten: an idle
  // session with unwritten output has a client that stopped reading.
  bool HasUnsentOutput() const;

 private:
  void Run();
  // Container input: the decode thread (DecodeAhead) runs up to kDecodeAheadFrames
  // (session_memory.h) ahead of the pipeline thread (RunContainer), which selects,
  // converts and submits.
  Status RunContainer();
  struct DecodedForPipeline;  // what the decode thread hands over (session_container_input.cpp)
  // The decode thread: demuxes and decodes into `hand_off` until the input ends (OK), the
  // hand-off stops or decoding fails, and seeks again when a seek landed late.
  Status DecodeAhead(media::ContainerDecoder& decoder, const media::VideoStreamInfo& v, int64_t start_target,
                     int64_t rate_duration, const std::shared_ptr<media::SurfaceGate>& surfaces,
                     std::shared_ptr<DecodeBalancer::Ticket>& ticket, DecodeHandOff<DecodedForPipeline>& hand_off);
  // Device frames the session may hold (its SurfaceGate's bound, the decoder's extra
  // surfaces): decode.held_frames plus those its own stages hold back.
  int HeldDeviceFrames() const;
  // The decoder's damage counts into the session's (Progress, Summary) and the metrics.
  void RecordDamage(const media::ContainerDecoder& decoder);
  Status RunRaw();
  // The raw input's frames, from messages or shared memory, to the worker until it ends.
  Status SubmitRawFrames();
  // A ring from the pool to assemble frame_chunks in (GPU workers), and back at the end.
  void TakeAssemblyRing();
  void ReturnAssemblyRing();
  // `width` x `height`: the decoded size; `display`: the input's display matrix, which
  // the renditions are turned by (JobSpec.autorotate) or which the output carries.
  // `field_order`: the source's (container output says it, unless the frames are
  // deinterlaced).
  Status BeginOutput(int width, int height, int rate_num, int rate_den, int tb_num, int tb_den,
                     const std::string& codec, const media::DisplayOrientation& display, AVFieldOrder field_order,
                     const AVCodecParameters* audio, AVRational audio_time_base);
  // A frame the selection keeps, on its way to the worker. `pts`: in the input's time base.
  // `device`: the frame's planes are device surfaces (hardware decoding), frame by frame,
  // since a stream can move from the video engines to the CPU mid-stream.
  struct KeptFrame {
    FrameView view;
    int64_t pts = 0;
    std::shared_ptr<void> keepalive;
    std::function<void()> on_input_released;  // called once the worker is done with the input
    std::optional<FrameRequest::Deinterlace> deinterlace;
    FrameRequest::DeviceInput device;
  };
  // Without JobSpec.frame_rate: SubmitFrame at the frame's pts. With it, the frame waits
  // for the next one (or FinishKept), which says at which grid points it is written
  // (FrameRateSampler); a frame on none is let go unencoded.
  Status SubmitKept(KeptFrame&& frame);
  // The input ended (or the selection did) at `end_pts`: the last frame's pts plus its
  // duration, in the input's time base.
  Status FinishKept(int64_t end_pts);
  // frame_rate with max_frames: that many frames are written, nothing more is read.
  bool SamplingDone() const { return sampler_ && sampler_->done(); }
  // Where a frame is written: `count` output frames from `pts` on, one pts apart (the
  // frame_rate grid repeats a frame), its JPEGs encoded once and sent each time.
  struct OutputTimes {
    int64_t pts = 0;
    int64_t count = 1;
    // What the worker returns: the frame's JPEGs; a storyboard frame's tiles placed in
    // the open sprite (nothing to write); a sprite's JPEG, at its first cell's pts.
    enum class Kind { kFrame, kTiles, kSprite } kind = Kind::kFrame;
  };
  Status SubmitFrame(KeptFrame&& frame, OutputTimes times);
  // The request to the worker's lane, once the output bound has room; its on_done
  // queues the result for the output thread with `times`.
  Status SubmitToLane(FrameRequest request, OutputTimes times);
  // Storyboards (session_storyboard.cpp): a frame placed in `times.count` cells, sprites
  // encoded as they fill, and at the end (FinishStoryboard, with the last cue's end on the
  // cells' clock) the last sprite and the WebVTT index, sent before Summary.
  Status SubmitTiles(KeptFrame&& frame, OutputTimes times);
  Status SubmitSprite();
  Status FinishStoryboard(int64_t end_pts);
  void SendStoryboard();
  // The frame_rate sampler's last frame (FinishKept without storyboards).
  Status FinishSampling(int64_t end_pts);
  // A frame the worker handed over (on its thread): queued for the output thread, so the
  // worker's hand-over never runs this session's muxing or message building.
  void OnFrameDone(OutputTimes times, FrameResult&& result);
  struct DoneFrame {
    OutputTimes times;
    FrameResult result;
    std::chrono::steady_clock::time_point handed_over;
    size_t reserved_bytes = 0;  // its JPEG bytes, counted as unsent output while queued
  };
  // The output thread: writes each frame handed over (WriteFrame), in order, until
  // StopOutput() and the queue is empty.
  void OutputLoop();
  void WriteFrame(DoneFrame& frame);
  void StopOutput();
  // A frame is finished with: written, or dropped after a failure.
  void FrameCompleted();
  // Output not yet written to the client (what SubmitFrame's bound counts): sent
  // messages' payload and queued frames' JPEG bytes. DropUnsent wakes SubmitFrame.
  void AddUnsent(size_t bytes);
  void DropUnsent(size_t bytes);
  // Sends (or muxes) each rendition's JPEG of a finished frame as output frame
  // frames_out_ at `pts`; false once the session failed (a muxer refused it).
  bool WriteJpegs(const FrameResult& result, int64_t pts);
  void LogFirstFrame() const;  // first_frame_, at debug level
  // Sends rendition `rendition` of frame `index`: into a free shared JPEG slot when the
  // job has them and it fits, else in OutputPacket.data messages.
  void SendJpeg(uint32_t rendition, uint64_t index, int64_t pts, const JpegBytes& jpeg);
  Status WaitForAllFrames();
  // After a failure: until every frame the worker took has completed (the lane's queued
  // ones were dropped), or `timeout`. False on the timeout.
  bool WaitForWorkerFrames(std::chrono::seconds timeout);
  void Send(v1::TranscodeResponse response);
  void Touch();
  void Fail(Status status);

  const std::string id_;
  const std::string owner_;
  const Job job_;
  const SessionOptions options_;
  const std::shared_ptr<Lane> lane_;
  const std::string worker_name_;
  const WorkerInfo worker_;
  const std::chrono::system_clock::time_point started_wall_ = std::chrono::system_clock::now();
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  // Where the time to the first frame went (container input), logged at debug level once
  // it is written: input opened (probe, decoder and its device; of which settling the
  // hardware decoder, and of that waiting for the decode device's lifecycle lock), first
  // frame decoded (of which waiting for input and decoding), and written.
  struct FirstFrame {
    std::chrono::steady_clock::time_point opened{}, decoded{};
    double settle_s = 0, settle_wait_s = 0, demux_s = 0, decode_s = 0;
  } first_frame_;

  std::mutex sink_mu_;  // sink_ and closed_; no sink call comes back into the session
  SessionSink* sink_ = nullptr;
  bool closed_ = false;

  // Container input.
  media::ByteQueue bytes_;
  // Seekable input: the last ReadRequest and whether bytes of it have come.
  mutable std::mutex request_mu_;
  uint64_t request_id_ = 0, request_offset_ = 0;
  bool request_answered_ = true;
  std::atomic<uint64_t> read_requests_{0}, spooled_bytes_{0};
  std::atomic<uint64_t> frames_deinterlaced_{0};
  // Hardware decoding: the worker's device (null: none, for `decode_unavailable_`), and
  // what the decoder turned out to be, for Started.
  std::shared_ptr<media::HwDecodeDevice> decode_device_;
  std::string decode_unavailable_;
  std::shared_ptr<DecodeBalancer> decode_balancer_;
  int decode_worker_ = 0;
  std::string decoder_, decoder_api_, decoder_name_;
  std::string decoder_failover_;  // the engines gave the stream up mid-stream (Summary); the run thread's
  std::function<Status(const SessionMemoryEstimate&)> memory_check_;  // set before Start()
  // Raw input: frames assembled from chunks by the reactor, or in shared-memory slots.
  struct RawFrame {
    const uint8_t* data = nullptr;
    size_t size = 0;
    std::shared_ptr<void> keepalive;  // owns `data`
    int64_t pts = 0;
    int shared_slot = -1;  // shared-memory input: the slot `data` lies in
  };
  // The frame in shared slot `slot` has been copied by the worker.
  void ReleaseSharedSlot(int slot);
  // INVALID_ARGUMENT naming `what` unless `pts` is after the last raw frame's; raw_mu_ held.
  Status CheckRawPtsLocked(const std::string& what, int64_t pts);
  std::mutex raw_mu_;
  std::condition_variable raw_cv_;
  std::deque<RawFrame> raw_frames_;
  // The frame being assembled from frame_chunk messages, in a buffer of the ring or of
  // the heap (null: no frame under way), and its bytes so far.
  std::shared_ptr<uint8_t> assembling_;
  size_t assembling_size_ = 0;
  int64_t assembling_pts_ = 0;
  std::shared_ptr<FrameAssemblyRing> assembly_ring_;  // guarded by raw_mu_; null: none
  bool raw_refused_ = false;
  bool input_ended_ = false;
  bool have_last_raw_pts_ = false;  // guarded by raw_mu_, as last_raw_pts_
  int64_t last_raw_pts_ = 0;
  std::string attach_socket_, attach_key_;       // set before Start()
  std::shared_ptr<SharedFrameMemory> shared_;    // guarded by raw_mu_
  bool attached_ = false;                        // guarded by raw_mu_
  std::atomic<uint32_t> shared_busy_{0};         // a bit per slot sent and not yet released

  // JobSpec.frame_rate: made by BeginOutput; the pipeline thread's, as the frame it holds.
  std::optional<FrameRateSampler> sampler_;
  std::optional<KeptFrame> held_;
  // Job::storyboard: made by BeginOutput; the open sprite, the last cell's pts and, once
  // the input has ended, the index. The pipeline thread's.
  std::optional<StoryboardLayout> storyboard_;
  std::shared_ptr<Sprite> sprite_;
  int64_t last_cell_pts_ = 0;
  std::string storyboard_vtt_;
  std::vector<std::string> notes_;  // Started.notes; the pipeline thread's, before BeginOutput
  // Container input's span and frame count from its header (Started.source_*), in
  // source_time_base_; set before BeginOutput. A time base of 0: raw input, none.
  int64_t source_start_pts_ = AV_NOPTS_VALUE, source_duration_ = 0, source_frames_ = 0;
  AVRational source_time_base_{0, 1};
  std::vector<Rendition> renditions_;
  Orientation turn_;  // applied to every frame (autorotate), set by BeginOutput
  std::vector<std::unique_ptr<media::ContainerMuxer>> muxers_;
  std::mutex mux_mu_;  // muxers are written by the output thread (video) and Run (audio)

  std::mutex output_mu_;
  std::condition_variable output_cv_;
  std::deque<DoneFrame> output_queue_;  // bounded by the frames submitted and not completed
  bool output_stopping_ = false;
  bool output_stopped_ = false;  // later frames are dropped, and counted, where they arrive
  std::thread output_thread_;    // started by Start(), joined by Run()

  // Completion tracking and output backpressure.
  mutable std::mutex state_mu_;
  std::condition_variable state_cv_;
  uint64_t submitted_ = 0, completed_ = 0;
  size_t unsent_bytes_ = 0;
  std::unique_ptr<SharedJpegSlots> shared_out_;  // slot states guarded; made in BeginOutput, before Started
  Status failure_;
  bool cancelled_ = false;

  std::atomic<uint64_t> frames_in_{0}, frames_out_{0}, bytes_in_{0}, bytes_out_{0};
  // Container input's damage (the decode thread writes them; Progress reads them).
  std::atomic<uint64_t> decode_errors_{0}, frames_dropped_{0};
  std::atomic<bool> truncated_{false};
  std::mutex damage_mu_;     // damage_note_: the decode and pipeline threads write it
  std::string damage_note_;  // the first error, for the session's one warning
  std::atomic<int64_t> last_activity_ns_{0};
  std::chrono::steady_clock::time_point last_progress_ = std::chrono::steady_clock::now();
  int64_t last_pts_ = 0;  // of the last frame written (Progress.pts); the output thread's
  // Output thread only. handover: from the worker's finished encode to this session's
  // OnFrameDone (the worker's delivery hop).
  double encode_seconds_ = 0, queue_seconds_ = 0, handover_seconds_ = 0;
  // Pipeline thread only. demux: reading packets (with any wait for input); decode: the
  // decoder; surfaces: waiting for a device frame to come back (SurfaceGate); lane: for
  // room in the worker's lane; output: for the client to take encoded bytes.
  double demux_seconds_ = 0, decode_seconds_ = 0, surfaces_wait_seconds_ = 0;
  double lane_wait_seconds_ = 0, output_wait_seconds_ = 0;
  std::atomic<bool> finished_{false};
  SessionMeter meter_;  // renditions set in BeginOutput, before the first frame
};

}  // namespace conveyor
