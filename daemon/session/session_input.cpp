// A Transcode stream's input into its Session (see session_input.h).
#include "session_input.h"

namespace conveyor {

bool SessionInput::Offer(v1::TranscodeRequest& request) {
  // A release takes no input room, so it is never held back: the daemon's JPEG slots
  // come free even while input waits.
  if (request.message_case() == v1::TranscodeRequest::kOutputSlotReleased) {
    return Settle(session_->ReleaseOutputSlot(request.output_slot_released().slot()), true);
  }
  Status failure;
  bool ended = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended = ended_;
    if (request.message_case() == v1::TranscodeRequest::kEndOfInput) ended_ = true;
  }
  if (ended) {
    const google::protobuf::FieldDescriptor* field =
        request.GetDescriptor()->FindFieldByNumber(static_cast<int>(request.message_case()));
    return Settle(InvalidArgument(std::string(field != nullptr ? field->name() : "message") +
                                  ": after end_of_input (only output_slot_released may follow it)"),
                  false);
  }
  if (request.message_case() == v1::TranscodeRequest::kEndOfInput) {
    session_->EndOfInput();
    return true;  // releases may follow; the half-close ends the reads
  }
  bool read_next = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    switch (request.message_case()) {
      case v1::TranscodeRequest::kSpec:
        failure = InvalidArgument("spec: sent twice; only the first request carries a JobSpec");
        break;
      case v1::TranscodeRequest::kContainerChunk: {
        const std::string& data = request.container_chunk();
        pending_bytes_.assign(data.begin(), data.end());
        break;
      }
      case v1::TranscodeRequest::kContainerRange: {
        v1::ContainerRange& range = *request.mutable_container_range();
        pending_bytes_.assign(range.data().begin(), range.data().end());
        range.clear_data();
        pending_range_ = std::move(range);
        break;
      }
      case v1::TranscodeRequest::kFrameChunk:
        pending_frame_ = std::move(*request.mutable_frame_chunk());
        break;
      case v1::TranscodeRequest::kSharedFrame:
        pending_shared_ = request.shared_frame();
        break;
      default:
        failure = InvalidArgument("message: empty request");
        break;
    }
    if (failure.ok()) {
      StatusOr<bool> taken = PushPendingLocked();
      if (!taken.ok()) {
        failure = taken.status();
      } else if (*taken) {
        read_next = true;
      } else {
        paused_ = true;
      }
    }
  }
  return Settle(failure, read_next);
}

bool SessionInput::Resume() {
  Status failure;
  bool read_next = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!paused_) return false;
    StatusOr<bool> taken = PushPendingLocked();
    if (!taken.ok()) {
      failure = taken.status();
      paused_ = false;
    } else if (*taken) {
      paused_ = false;
      read_next = true;
    }
  }
  return Settle(failure, read_next);
}

bool SessionInput::Paused() const {
  std::lock_guard<std::mutex> lock(mu_);
  return paused_;
}

StatusOr<bool> SessionInput::PushPendingLocked() {
  StatusOr<bool> taken = pending_frame_    ? session_->TryPushFrameChunk(*pending_frame_)
                          : pending_shared_ ? session_->TryPushSharedFrame(*pending_shared_)
                          : pending_range_  ? session_->TryPushContainerRange(*pending_range_, pending_bytes_)
                                            : session_->TryPushContainerBytes(pending_bytes_);
  if (taken.ok() && *taken) {
    pending_frame_.reset();
    pending_shared_.reset();
    pending_range_.reset();
    pending_bytes_.clear();
  }
  return taken;
}

bool SessionInput::Settle(const Status& failure, bool read_next) {
  if (failure.ok()) return read_next;
  session_->Cancel(failure);
  return false;
}

}  // namespace conveyor
