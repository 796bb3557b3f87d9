// A Transcode stream's pipeline (see session.h).
#include "session.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

#include "demux_decoder.h"
#include "frame_convert.h"

extern "C" {
#include <libavutil/frame.h>
}

namespace conveyor {
namespace {

// How long a failed session waits for the frames the worker holds: they take
// milliseconds; a worker that hangs is the watchdog's to recover, and the session ends
// anyway after this.
constexpr std::chrono::seconds kWorkerReturnTimeout{30};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Decoder and demuxer failures are the client's data, except a cancel.
Status AsInputError(const Status& s) {
  if (s.code() == StatusCode::kCancelled || s.code() == StatusCode::kFailedPrecondition ||
      s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kResourceExhausted) {
    return s.WithContext("input");
  }
  return Status(StatusCode::kInvalidArgument, "input: " + s.message());
}

}  // namespace

Session::Session(std::string id, std::string owner, Job job, SessionOptions options, std::shared_ptr<Lane> lane,
                 std::string worker_name, std::string backend)
    : id_(std::move(id)),
      owner_(std::move(owner)),
      job_(std::move(job)),
      options_(options),
      lane_(std::move(lane)),
      worker_name_(std::move(worker_name)),
      backend_(std::move(backend)),
      bytes_(options.input_bytes, [this] {
        std::lock_guard<std::recursive_mutex> lock(sink_mu_);
        if (sink_ != nullptr && !closed_) sink_->ResumeReading();
      }),
      meter_(options.metrics, lane_->worker_index(), backend_ != "cpu") {
  Touch();
}

Session::~Session() = default;

void Session::Start(SessionSink* sink) {
  {
    std::lock_guard<std::recursive_mutex> lock(sink_mu_);
    sink_ = sink;
  }
  // The thread holds the session alive until the pipeline has ended.
  std::thread([self = shared_from_this()] { self->Run(); }).detach();
}

void Session::DetachSink() {
  std::lock_guard<std::recursive_mutex> lock(sink_mu_);
  sink_ = nullptr;
}

void Session::AbortStream() {
  std::lock_guard<std::recursive_mutex> lock(sink_mu_);
  if (sink_ != nullptr) sink_->Abort();
}

void Session::Touch() { last_activity_ns_.store(NowNs()); }

double Session::IdleSeconds() const { return (NowNs() - last_activity_ns_.load()) / 1e9; }

bool Session::HasUnsentOutput() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return unsent_bytes_ > 0 || (shared_out_ && shared_out_->AwaitingRelease());
}

StatusOr<bool> Session::TryPushContainerBytes(std::vector<uint8_t>& chunk) {
  if (!job_.container_input) return InvalidArgument("container_chunk: this job's input is raw frames");
  if (bytes_in_.load() + chunk.size() > options_.max_input_bytes) {
    return ResourceExhausted("input exceeds max_session_bytes (" + std::to_string(options_.max_input_bytes) + ")");
  }
  const size_t n = chunk.size();
  if (!bytes_.TryPush(chunk)) return false;
  bytes_in_ += n;
  meter_.BytesIn(n);
  Touch();
  return true;
}

StatusOr<bool> Session::TryPushFrameChunk(const v1::RawFrameChunk& chunk) {
  if (job_.container_input) return InvalidArgument("frame_chunk: this job's input is a container");
  if (job_.shared_memory_slots > 0) {
    return InvalidArgument("frame_chunk: this job's frames come through shared memory (shared_frame messages)");
  }
  const size_t expected = job_.RawFrameBytes();
  std::lock_guard<std::mutex> lock(raw_mu_);  // raw_frames_ below is the pipeline thread's too
  const std::string frame = "frame_chunk (frame " + std::to_string(frames_in_.load() + raw_frames_.size()) + ")";
  if (input_ended_) return InvalidArgument(frame + ": after end of input");
  if (!assembling_) {
    if (raw_frames_.size() >= static_cast<size_t>(options_.queue_frames)) {
      raw_refused_ = true;
      return false;
    }
    if (assembly_ring_ != nullptr) assembling_ = assembly_ring_->TryTake();
    if (assembling_ == nullptr) {  // no ring, or all of it in use: the worker copies this frame
      assembling_ = std::shared_ptr<uint8_t>(new uint8_t[expected], std::default_delete<uint8_t[]>());
    }
    assembling_size_ = 0;
    assembling_pts_ = chunk.pts();
  }
  if (assembling_size_ + chunk.data().size() > expected) {
    return InvalidArgument(frame + ": more than the " + std::to_string(expected) + " bytes of a " +
                           std::to_string(job_.raw_width) + "x" + std::to_string(job_.raw_height) + " " +
                           PixelFormatName(job_.raw_format) + " frame");
  }
  if (bytes_in_.load() + chunk.data().size() > options_.max_input_bytes) {
    return ResourceExhausted("input exceeds max_session_bytes (" + std::to_string(options_.max_input_bytes) + ")");
  }
  std::memcpy(assembling_.get() + assembling_size_, chunk.data().data(), chunk.data().size());
  assembling_size_ += chunk.data().size();
  bytes_in_ += chunk.data().size();
  meter_.BytesIn(chunk.data().size());
  Touch();
  if (chunk.end_of_frame()) {
    if (assembling_size_ != expected) {
      return InvalidArgument(frame + ": " + std::to_string(assembling_size_) + " bytes, but a " +
                             std::to_string(job_.raw_width) + "x" + std::to_string(job_.raw_height) + " " +
                             PixelFormatName(job_.raw_format) + " frame has " + std::to_string(expected));
    }
    const uint8_t* data = assembling_.get();
    raw_frames_.push_back({data, assembling_size_, std::move(assembling_), assembling_pts_, -1});
    assembling_size_ = 0;
    raw_cv_.notify_all();
  }
  return true;
}

static_assert(kMaxSharedMemorySlots <= 32, "shared_busy_ has a bit per slot");

void Session::EnableSharedMemory(std::string attach_socket, std::string attach_key) {
  attach_socket_ = std::move(attach_socket);
  attach_key_ = std::move(attach_key);
}

StatusOr<UniqueFd> Session::AttachSharedMemory(int input_fd) {
  if (job_.shared_memory_slots == 0 && job_.output_shared_slots == 0) {
    return FailedPrecondition("this session takes no shared memory");
  }
  std::lock_guard<std::mutex> lock(raw_mu_);
  if (attached_) return FailedPrecondition("this session has its shared memory already");
  UniqueFd output;
  if (job_.output_shared_slots > 0) {
    std::lock_guard<std::mutex> state_lock(state_mu_);
    if (!shared_out_) return FailedPrecondition("the session has not started; attach after Started");
    output = UniqueFd(fcntl(shared_out_->fd(), F_DUPFD_CLOEXEC, 0));
    if (!output.valid()) return ResourceExhausted(std::string("fcntl(F_DUPFD_CLOEXEC): ") + std::strerror(errno));
  }
  if (job_.shared_memory_slots > 0) {
    if (input_fd < 0) return FailedPrecondition("no memfd came with the key (send it as SCM_RIGHTS)");
    ASSIGN_OR_RETURN(shared_, SharedFrameMemory::Map(input_fd, job_.shared_memory_slots, job_.RawFrameBytes()));
    const Status registered = shared_->RegisterWith(lane_->worker());
    spdlog::debug("session {}: shared memory attached, {} slots of {} bytes, {}", id_, shared_->slots(),
                  shared_->slot_bytes(),
                  registered.ok() ? "read in place" : "copied (" + registered.ToString() + ")");
    raw_cv_.notify_all();
  } else if (input_fd >= 0) {
    return FailedPrecondition("this session takes no frame memfd (spec.raw.shared_memory_slots is 0); send the key "
                              "alone");
  }
  attached_ = true;
  return output;
}

Status Session::ReleaseOutputSlot(uint32_t slot) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (!shared_out_) {
      return InvalidArgument("output_slot_released: this job's JPEGs come in OutputPacket.data "
                             "(spec.output.frames.shared_memory_slots is 0)");
    }
    RETURN_IF_ERROR(shared_out_->Release(slot));
  }
  Touch();
  return OkStatus();
}

StatusOr<bool> Session::TryPushSharedFrame(const v1::SharedFrame& frame) {
  if (job_.shared_memory_slots == 0) {
    return InvalidArgument("shared_frame: this job takes frame_chunk messages (spec.raw.shared_memory_slots is 0)");
  }
  std::lock_guard<std::mutex> lock(raw_mu_);
  const std::string what = "shared_frame (frame " + std::to_string(frames_in_.load() + raw_frames_.size()) + ")";
  if (input_ended_) return InvalidArgument(what + ": after end of input");
  if (!shared_) {
    return FailedPrecondition(what + ": no shared memory attached yet (attach it on Started.shared_memory first)");
  }
  if (frame.slot() >= static_cast<uint32_t>(shared_->slots())) {
    return InvalidArgument(what + ".slot: " + std::to_string(frame.slot()) + " is out of range (" +
                           std::to_string(shared_->slots()) + " slots)");
  }
  const int slot = static_cast<int>(frame.slot());
  const uint32_t bit = 1u << slot;
  if ((shared_busy_.load() & bit) != 0) {
    return InvalidArgument(what + ".slot: slot " + std::to_string(slot) +
                           " is still in use; write to it only after its slot_released");
  }
  if (raw_frames_.size() >= static_cast<size_t>(options_.queue_frames)) {
    raw_refused_ = true;
    return false;
  }
  const size_t size = shared_->slot_bytes();
  if (bytes_in_.load() + size > options_.max_input_bytes) {
    return ResourceExhausted("input exceeds max_session_bytes (" + std::to_string(options_.max_input_bytes) + ")");
  }
  shared_busy_.fetch_or(bit);
  // The slot goes back to the client when the worker releases the frame's input
  // (RunRaw); the mapping stays while the session does.
  raw_frames_.push_back({shared_->slot(slot), size, shared_, frame.pts(), slot});
  bytes_in_ += size;
  meter_.BytesIn(size);
  Touch();
  raw_cv_.notify_all();
  return true;
}

void Session::ReleaseSharedSlot(int slot) {
  shared_busy_.fetch_and(~(1u << slot));
  v1::TranscodeResponse r;
  r.mutable_slot_released()->set_slot(static_cast<uint32_t>(slot));
  Send(std::move(r));
}

void Session::EndOfInput() {
  bytes_.Close();
  std::lock_guard<std::mutex> lock(raw_mu_);
  input_ended_ = true;
  raw_cv_.notify_all();
}

void Session::Cancel(Status status) { Fail(std::move(status)); }

void Session::Fail(Status status) {
  spdlog::debug("session {}: stopping: {}", id_, status.ToString());
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (failure_.ok()) failure_ = std::move(status);
    cancelled_ = true;
  }
  // Frames still queued in the lane never reach the worker, so they never complete.
  const int dropped = lane_->Cancel();
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    submitted_ -= std::min<uint64_t>(static_cast<uint64_t>(dropped), submitted_ - completed_);
  }
  state_cv_.notify_all();
  bytes_.Cancel();
  {
    std::lock_guard<std::mutex> lock(raw_mu_);
    raw_cv_.notify_all();
  }
}

void Session::OnSent(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    unsent_bytes_ -= std::min(bytes, unsent_bytes_);
  }
  state_cv_.notify_all();
  Touch();
}

void Session::Send(v1::TranscodeResponse response) {
  const size_t payload_bytes = PayloadBytes(response);
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    unsent_bytes_ += payload_bytes;
  }
  std::lock_guard<std::recursive_mutex> lock(sink_mu_);
  if (sink_ != nullptr && !closed_) {
    sink_->Send(std::move(response));
    return;
  }
  std::lock_guard<std::mutex> state_lock(state_mu_);
  unsent_bytes_ -= std::min(payload_bytes, unsent_bytes_);
}

void Session::Run() {
  Status s = job_.container_input ? RunContainer() : RunRaw();
  if (s.ok()) s = WaitForAllFrames();
  if (s.ok() && !muxers_.empty()) {
    std::lock_guard<std::mutex> lock(mux_mu_);
    for (auto& m : muxers_) {
      s = m->Finish();
      if (!s.ok()) break;
    }
  }
  if (s.ok()) {
    v1::TranscodeResponse r;
    v1::Summary* summary = r.mutable_summary();
    summary->set_frames_in(frames_in_.load());
    summary->set_frames_out(frames_out_.load());
    summary->set_bytes_in(bytes_in_.load());
    summary->set_bytes_out(bytes_out_.load());
    summary->set_wall_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    // Summed over frames; the stages of different frames overlap in time.
    const std::pair<const char*, double> stages[] = {
        {"decode", decode_seconds_}, {"queue", queue_seconds_}, {"encode", encode_seconds_},
        {"handover", handover_seconds_}};
    for (const auto& [name, seconds] : stages) {
      v1::StageSeconds* stage = summary->add_stages();
      stage->set_stage(name);
      stage->set_seconds(seconds);
    }
    Send(std::move(r));
  } else {
    Fail(s);
    // The worker may still hold frames of this session. The stream ends once they are
    // back, so that a session's end (the client's status, ListSessions, the session
    // count) means its slots are free again.
    if (!WaitForWorkerFrames(kWorkerReturnTimeout)) {
      spdlog::warn("session {}: the worker still holds frames of it {} s after it failed; ending it anyway", id_,
                   kWorkerReturnTimeout.count());
    }
    std::lock_guard<std::mutex> lock(state_mu_);
    s = failure_;  // the first failure explains the session's end
  }
  if (s.ok()) {
    spdlog::info("session {}: done, {} frames in, {} out", id_, frames_in_.load(), frames_out_.load());
  } else {
    spdlog::info("session {}: ended: {} ({} frames in, {} out)", id_, s.ToString(), frames_in_.load(),
                 frames_out_.load());
  }
  Touch();  // the reaper's clock for a client that does not read the end restarts here
  {
    std::lock_guard<std::recursive_mutex> lock(sink_mu_);
    if (sink_ != nullptr && !closed_) sink_->Close(s);
    closed_ = true;
  }
  finished_.store(true);
}

Status Session::BeginOutput(int width, int height, int rate_num, int rate_den, int tb_num, int tb_den,
                            const std::string& codec, int rotation, const AVCodecParameters* audio,
                            AVRational audio_time_base) {
  ASSIGN_OR_RETURN(renditions_, ResolveRenditions(job_, width, height, options_.limits));
  std::vector<std::string> labels;
  for (const Rendition& r : renditions_) {  // 0 x 0 is the source size
    labels.push_back(std::to_string(r.width == 0 ? width : r.width) + "x" +
                     std::to_string(r.height == 0 ? height : r.height));
  }
  meter_.SetRenditions(labels);
  v1::TranscodeResponse r;
  v1::Started* started = r.mutable_started();
  started->set_session_id(id_);
  started->set_worker(worker_name_);
  started->set_backend(backend_);
  started->mutable_time_base()->set_num(tb_num);
  started->mutable_time_base()->set_den(tb_den);
  started->set_source_width(width);
  started->set_source_height(height);
  started->set_source_codec(codec);
  started->set_rotation_degrees(rotation);
  if (job_.output_shared_slots > 0) {
    std::vector<std::pair<int, int>> sizes;
    for (const Rendition& rendition : renditions_) {
      sizes.emplace_back(rendition.width == 0 ? width : rendition.width,
                         rendition.height == 0 ? height : rendition.height);
    }
    ASSIGN_OR_RETURN(std::unique_ptr<SharedJpegSlots> slots,
                     SharedJpegSlots::Create(job_.output_shared_slots, SharedJpegSlotBytes(sizes), "conveyor-jpegs"));
    v1::SharedMemoryOutput* shm = started->mutable_shared_memory_output();
    shm->set_attach_socket(attach_socket_);
    shm->set_attach_key(attach_key_);
    shm->set_slot_bytes(slots->slot_bytes());
    shm->set_slots(static_cast<uint32_t>(slots->slots()));
    std::lock_guard<std::mutex> lock(state_mu_);
    shared_out_ = std::move(slots);
  }
  if (job_.shared_memory_slots > 0) {
    v1::SharedMemoryInput* shm = started->mutable_shared_memory();
    shm->set_attach_socket(attach_socket_);
    shm->set_attach_key(attach_key_);
    shm->set_slot_bytes(job_.RawFrameBytes());
    shm->set_slots(static_cast<uint32_t>(job_.shared_memory_slots));
  }
  Send(std::move(r));
  if (!job_.container_output) return OkStatus();
  for (size_t i = 0; i < renditions_.size(); ++i) {
    media::MuxerOptions mo;
    mo.format = job_.container;
    mo.width = renditions_[i].width == 0 ? width : renditions_[i].width;
    mo.height = renditions_[i].height == 0 ? height : renditions_[i].height;
    mo.time_base = AVRational{tb_num, tb_den};
    mo.frame_rate = AVRational{rate_num, rate_den};
    mo.rotation_degrees = rotation;
    mo.audio = audio;
    mo.audio_time_base = audio_time_base;
    const uint32_t index = static_cast<uint32_t>(i);
    auto sink = [this, index](const uint8_t* data, size_t size) -> Status {
      v1::TranscodeResponse chunk;
      chunk.mutable_container_chunk()->set_rendition(index);
      chunk.mutable_container_chunk()->set_data(data, size);
      bytes_out_ += size;
      meter_.BytesOut(size);
      Send(std::move(chunk));
      return OkStatus();
    };
    ASSIGN_OR_RETURN(std::unique_ptr<media::ContainerMuxer> m, media::ContainerMuxer::Open(mo, sink));
    muxers_.push_back(std::move(m));
  }
  return OkStatus();
}

Status Session::RunContainer() {
  media::DecoderOptions o;
  o.format = job_.format_hint;
  o.threads = options_.decode_threads;
  o.audio = job_.audio;
  // Pictures past the size limit are refused before FFmpeg allocates them; the exact
  // per-dimension check follows in BeginOutput.
  o.max_pixels = static_cast<int64_t>(options_.limits.max_width) * options_.limits.max_height;
  StatusOr<std::unique_ptr<media::ContainerDecoder>> opened = media::ContainerDecoder::Open(&bytes_, o);
  if (!opened.ok()) return AsInputError(opened.status());
  std::unique_ptr<media::ContainerDecoder> decoder = std::move(opened).value();
  const media::VideoStreamInfo& v = decoder->video();
  const media::AudioStreamInfo* audio = decoder->audio();
  if (job_.audio && audio == nullptr) return InvalidArgument("spec.audio_passthrough: the input has no audio stream");
  if (v.frame_rate.num > 0 && v.frame_rate.den > 0 &&
      static_cast<double>(v.frame_rate.num) / v.frame_rate.den > options_.limits.max_frame_rate) {
    return InvalidArgument("input: frame rate " + std::to_string(v.frame_rate.num) + "/" +
                           std::to_string(v.frame_rate.den) + " is above the limit");
  }
  RETURN_IF_ERROR(BeginOutput(v.width, v.height, v.frame_rate.num, v.frame_rate.den > 0 ? v.frame_rate.den : 1,
                              v.time_base.num, v.time_base.den, v.codec, v.rotation_degrees,
                              audio ? audio->codecpar : nullptr, audio ? audio->time_base : AVRational{0, 1}));
  if (audio != nullptr) {
    decoder->SetAudioSink([this](const AVPacket& packet) -> Status {
      std::lock_guard<std::mutex> lock(mux_mu_);
      for (auto& m : muxers_) RETURN_IF_ERROR(m->WriteAudio(packet));
      return OkStatus();
    });
  }
  media::FrameConverter converter;
  media::DecodedFrame f;
  for (;;) {
    const auto decode_start = std::chrono::steady_clock::now();
    StatusOr<bool> more = decoder->Next(&f);
    const double decode_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - decode_start).count();
    decode_seconds_ += decode_seconds;
    if (!more.ok()) return AsInputError(more.status());
    if (!*more) return OkStatus();
    if (f.width != v.width || f.height != v.height) {
      return InvalidArgument("input: frame " + std::to_string(f.number) + " is " + std::to_string(f.width) + "x" +
                             std::to_string(f.height) + ", the stream started at " + std::to_string(v.width) + "x" +
                             std::to_string(v.height) + " (size changes are not supported)");
    }
    frames_in_++;
    meter_.FrameIn();
    meter_.Decoded(decode_seconds);
    std::shared_ptr<void> keepalive;
    StatusOr<media::ConvertedFrame> converted = Status();
    if (media::PassThroughFormat(f.format)) {
      std::shared_ptr<AVFrame> ref(av_frame_clone(f.frame.get()), [](AVFrame* p) { av_frame_free(&p); });
      if (!ref) return ResourceExhausted("av_frame_clone: out of memory");
      converted = converter.Convert(*ref);
      keepalive = ref;
    } else {
      ASSIGN_OR_RETURN(PixelFormat target, media::EncoderFormatFor(f.format));
      auto buffer = std::make_shared<std::vector<uint8_t>>(PackedFrameSize(target, f.width, f.height));
      converted = converter.Convert(*f.frame, buffer->data(), buffer->size());
      keepalive = buffer;
    }
    if (!converted.ok()) return AsInputError(converted.status());
    const int64_t pts = f.pts == AV_NOPTS_VALUE ? f.number : f.pts;
    RETURN_IF_ERROR(SubmitFrame(converted->view, pts, std::move(keepalive)));
  }
}

Status Session::RunRaw() {
  RETURN_IF_ERROR(BeginOutput(job_.raw_width, job_.raw_height, job_.frame_rate_num, job_.frame_rate_den,
                              job_.frame_rate_den, job_.frame_rate_num, "rawvideo", 0, nullptr, AVRational{0, 1}));
  TakeAssemblyRing();
  Status s = SubmitRawFrames();
  ReturnAssemblyRing();
  return s;
}

void Session::TakeAssemblyRing() {
  if (job_.shared_memory_slots > 0 || options_.pinned_input == nullptr) return;
  // Enough buffers for the frames queued here, those in the lane, one with the worker
  // and one being assembled; frames past that are assembled in the heap and copied.
  const int buffers = std::min(2 * options_.queue_frames + 2, 32);
  StatusOr<std::shared_ptr<FrameAssemblyRing>> ring =
      options_.pinned_input->Acquire(lane_->worker(), buffers, job_.RawFrameBytes());
  if (!ring.ok()) {
    spdlog::debug("session {}: frames assembled in ordinary memory: {}", id_, ring.status().ToString());
    return;
  }
  spdlog::debug("session {}: frames assembled in {} registered buffers ({} bytes)", id_, buffers, (*ring)->bytes());
  std::lock_guard<std::mutex> lock(raw_mu_);
  assembly_ring_ = std::move(ring).value();
}

// However the input ended, the ring goes back to the pool for the next session; a chunk
// that still comes is assembled in the heap.
void Session::ReturnAssemblyRing() {
  std::shared_ptr<FrameAssemblyRing> ring;
  {
    std::lock_guard<std::mutex> lock(raw_mu_);
    ring = std::exchange(assembly_ring_, nullptr);
  }
  if (ring != nullptr) options_.pinned_input->Release(std::move(ring));
}

Status Session::SubmitRawFrames() {
  for (;;) {
    RawFrame frame;
    bool resume = false;
    {
      std::unique_lock<std::mutex> lock(raw_mu_);
      raw_cv_.wait(lock, [&] {
        std::lock_guard<std::mutex> state_lock(state_mu_);
        return cancelled_ || input_ended_ || !raw_frames_.empty();
      });
      if (raw_frames_.empty()) {
        std::lock_guard<std::mutex> state_lock(state_mu_);
        if (cancelled_) return failure_;
        if (assembling_) {
          return InvalidArgument("frame_chunk (frame " + std::to_string(frames_in_.load()) +
                                 "): input ended inside a frame, after " + std::to_string(assembling_size_) +
                                 " of " + std::to_string(job_.RawFrameBytes()) + " bytes");
        }
        return OkStatus();
      }
      frame = std::move(raw_frames_.front());
      raw_frames_.pop_front();
      // Counted under raw_mu_ with the pop: TryPushFrameChunk names a frame by
      // frames_in_ + raw_frames_.size(), which must not see the frame in neither.
      frames_in_++;
      resume = raw_refused_;
      raw_refused_ = false;
    }
    if (resume) {
      std::lock_guard<std::recursive_mutex> lock(sink_mu_);
      if (sink_ != nullptr && !closed_) sink_->ResumeReading();
    }
    meter_.FrameIn();
    ASSIGN_OR_RETURN(FrameView view, MakePackedFrameView(frame.data, frame.size, job_.raw_width, job_.raw_height,
                                                         job_.raw_format, job_.raw_matrix, job_.raw_range));
    std::function<void()> released;
    if (frame.shared_slot >= 0) {
      released = [self = weak_from_this(), slot = frame.shared_slot] {
        if (std::shared_ptr<Session> s = self.lock()) s->ReleaseSharedSlot(slot);
      };
    }
    RETURN_IF_ERROR(SubmitFrame(view, frame.pts, std::move(frame.keepalive), std::move(released)));
  }
}

Status Session::SubmitFrame(const FrameView& view, int64_t pts, std::shared_ptr<void> keepalive,
                            std::function<void()> on_input_released) {
  {
    std::unique_lock<std::mutex> lock(state_mu_);
    state_cv_.wait(lock, [&] { return cancelled_ || unsent_bytes_ < options_.output_bytes; });
    if (cancelled_) return failure_;
    ++submitted_;
  }
  FrameRequest request;
  request.id = frames_in_.load();
  request.frame = view;
  request.renditions = renditions_;
  // The session's own stream of frames: in order among themselves, never held back by
  // another session's. The address is unique among live sessions, and a session lives
  // while the worker holds any of its frames (on_done keeps it).
  request.stream = reinterpret_cast<uintptr_t>(this);
  request.on_done = [self = shared_from_this(), pts](FrameResult&& r) { self->OnFrameDone(pts, std::move(r)); };
  request.owner = std::move(keepalive);  // the CPU worker encodes from it, the GPU worker copies
  request.on_input_released = std::move(on_input_released);
  Status s = lane_->Submit(std::move(request));
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(state_mu_);
    --submitted_;
    return cancelled_ ? failure_ : s;
  }
  return OkStatus();
}

void Session::OnFrameDone(int64_t pts, FrameResult&& result) {
  const auto handover_start = std::chrono::steady_clock::now();
  Touch();
  bool ok = result.status.ok();
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    ok = ok && !cancelled_;
  }
  if (!result.status.ok()) {
    meter_.FrameFailed(result.status);
    Fail(result.status.WithContext("frame " + std::to_string(frames_out_.load())));
  } else if (ok) {
    const uint64_t index = frames_out_.load();
    for (size_t i = 0; i < result.jpeg.size() && ok; ++i) {
      const JpegBytes& jpeg = result.jpeg[i];
      if (!muxers_.empty()) {
        std::vector<uint8_t> scratch;  // the muxer takes one contiguous packet
        const uint8_t* image = jpeg.Contiguous(&scratch);
        std::lock_guard<std::mutex> lock(mux_mu_);
        const auto mux_start = std::chrono::steady_clock::now();
        Status s = muxers_[i]->WriteVideo(image, jpeg.size(), pts);
        meter_.Muxed(std::chrono::duration<double>(std::chrono::steady_clock::now() - mux_start).count());
        if (!s.ok()) {
          Fail(s.WithContext("mux rendition " + std::to_string(i)));
          ok = false;
        }
        continue;
      }
      SendJpeg(static_cast<uint32_t>(i), index, pts, jpeg);
      bytes_out_ += jpeg.size();
      meter_.BytesOut(jpeg.size());
    }
    if (ok) {
      frames_out_++;
      meter_.FrameDone(result);
      encode_seconds_ += std::chrono::duration<double>(result.times.done - result.times.started).count();
      handover_seconds_ += std::chrono::duration<double>(handover_start - result.times.done).count();
      queue_seconds_ += std::chrono::duration<double>(result.times.started - result.times.submitted).count();
      const auto now = std::chrono::steady_clock::now();
      if (now - last_progress_ >= std::chrono::seconds(1)) {
        last_progress_ = now;
        v1::TranscodeResponse r;
        r.mutable_progress()->set_frames_in(frames_in_.load());
        r.mutable_progress()->set_frames_out(frames_out_.load());
        r.mutable_progress()->set_fps(frames_out_.load() / std::chrono::duration<double>(now - started_).count());
        Send(std::move(r));
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    ++completed_;
  }
  state_cv_.notify_all();
}

void Session::SendJpeg(uint32_t rendition, uint64_t index, int64_t pts, const JpegBytes& jpeg) {
  v1::TranscodeResponse r;
  v1::OutputPacket* p = r.mutable_packet();
  p->set_rendition(rendition);
  p->set_frame_index(index);
  p->set_pts(pts);
  int slot = -1;
  uint8_t* to = nullptr;
  if (job_.output_shared_slots > 0) {  // no lock on the messages-only path
    std::lock_guard<std::mutex> lock(state_mu_);
    if (shared_out_ && jpeg.size() <= shared_out_->slot_bytes()) slot = shared_out_->Take();
    if (slot >= 0) to = shared_out_->slot(slot);
  }
  if (slot >= 0) {
    // The slot is this thread's until the packet naming it reaches the client.
    jpeg.CopyRange(0, jpeg.size(), to);
    p->mutable_shared()->set_slot(static_cast<uint32_t>(slot));
    p->mutable_shared()->set_size(jpeg.size());
    p->set_end_of_frame(true);
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      shared_out_->MarkSent(slot);
    }
    Send(std::move(r));
    return;
  }
  size_t offset = 0;
  do {
    const size_t n = std::min(options_.message_bytes, jpeg.size() - offset);
    v1::TranscodeResponse part = r;  // the header fields; data follows
    v1::OutputPacket* q = part.mutable_packet();
    jpeg.AppendRangeTo(offset, n, q->mutable_data());
    offset += n;
    q->set_end_of_frame(offset == jpeg.size());
    Send(std::move(part));
  } while (offset < jpeg.size());
}

Status Session::WaitForAllFrames() {
  std::unique_lock<std::mutex> lock(state_mu_);
  state_cv_.wait(lock, [&] { return cancelled_ || completed_ == submitted_; });
  return failure_;
}

bool Session::WaitForWorkerFrames(std::chrono::seconds timeout) {
  std::unique_lock<std::mutex> lock(state_mu_);
  return state_cv_.wait_for(lock, timeout, [&] { return completed_ == submitted_; });
}

}  // namespace conveyor
