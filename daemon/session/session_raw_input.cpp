// A Transcode stream's raw frame input (see session.h): frames assembled from
// frame_chunk messages or written by the client into shared-memory slots, queued by the
// reactor and handed to the worker by the pipeline thread.
#include "session.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include <spdlog/spdlog.h>

#include "frame_selection.h"

namespace conveyor {

// Frames must come in presentation order with increasing pts: a container muxer cannot
// take a frame that is not after the one before it (FFmpeg's muxers refuse it, or keep
// several frames at one time), and JPEG output would carry the same ambiguity.
Status Session::CheckRawPtsLocked(const std::string& what, int64_t pts) {
  if (have_last_raw_pts_ && pts <= last_raw_pts_) {
    return InvalidArgument(what + ".pts: " + std::to_string(pts) + " is not after the previous frame's pts " +
                           std::to_string(last_raw_pts_) + " (pts must increase)");
  }
  have_last_raw_pts_ = true;
  last_raw_pts_ = pts;
  return OkStatus();
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
    RETURN_IF_ERROR(CheckRawPtsLocked(frame, chunk.pts()));
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
  RETURN_IF_ERROR(CheckRawPtsLocked(what, frame.pts()));
  shared_busy_.fetch_or(bit);
  // The slot goes back to the client when the worker releases the frame's input
  // (SubmitRawFrames); the mapping stays while the session does.
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

Status Session::RunRaw() {
  RETURN_IF_ERROR(BeginOutput(job_.raw_width, job_.raw_height, job_.frame_rate_num, job_.frame_rate_den,
                              job_.frame_rate_den, job_.frame_rate_num, "rawvideo", media::DisplayOrientation{}, AV_FIELD_UNKNOWN, nullptr,
                              AVRational{0, 1}));
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
  // pts are in units of 1/frame_rate (RawFrameChunk.pts).
  FrameSelection selection(job_.selection, job_.frame_rate_den, job_.frame_rate_num);
  int64_t kept_end = 0;
  for (;;) {
    RawFrame frame;
    bool resume = false;
    bool ended = false;
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
        ended = true;
      } else {
        frame = std::move(raw_frames_.front());
        raw_frames_.pop_front();
        // Counted under raw_mu_ with the pop: TryPushFrameChunk names a frame by
        // frames_in_ + raw_frames_.size(), which must not see the frame in neither.
        frames_in_++;
        resume = raw_refused_;
        raw_refused_ = false;
      }
    }
    if (ended) return FinishKept(kept_end);
    if (resume) {
      std::lock_guard<std::mutex> lock(sink_mu_);
      if (sink_ != nullptr && !closed_) sink_->ResumeReading();
    }
    meter_.FrameIn();
    const FrameSelection::Verdict verdict = selection.Decide(frame.pts);
    if (verdict != FrameSelection::Verdict::kKeep) {
      // A frame not encoded is done with at once: its shared-memory slot goes back.
      if (frame.shared_slot >= 0) ReleaseSharedSlot(frame.shared_slot);
      if (verdict == FrameSelection::Verdict::kStop) return FinishKept(kept_end);
      continue;
    }
    ASSIGN_OR_RETURN(FrameView view, MakePackedFrameView(frame.data, frame.size, job_.raw_width, job_.raw_height,
                                                         job_.raw_format, job_.raw_matrix, job_.raw_range));
    std::function<void()> released;
    if (frame.shared_slot >= 0) {
      released = [self = weak_from_this(), slot = frame.shared_slot] {
        if (std::shared_ptr<Session> s = self.lock()) s->ReleaseSharedSlot(slot);
      };
    }
    kept_end = frame.pts + 1;  // a raw frame lasts one 1/frame_rate step
    RETURN_IF_ERROR(
        SubmitKept(KeptFrame{view, frame.pts, std::move(frame.keepalive), std::move(released), std::nullopt, {}}));
    // max_frames: the input is read no further
    if (selection.done() || SamplingDone()) return FinishKept(kept_end);
  }
}

}  // namespace conveyor
