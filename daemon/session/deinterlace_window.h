// The three frames the deinterlace stage reads: a session holds one decoded frame back
// until the next one comes, so that each frame goes to the worker with the frames before
// and after it (at the stream's ends, itself), as yadif reads them. The three go to the
// worker in one kind of memory: where the decoder moves from device surfaces to host
// frames mid-stream (the video engines gave the stream up), a neighbour of the other
// kind is replaced by the frame itself, as at a stream's end.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "frame.h"
#include "worker.h"

namespace conveyor {

class DeinterlaceWindow {
 public:
  struct Frame {
    FrameView view;
    int64_t pts = 0;
    std::shared_ptr<void> keepalive;  // owns the memory `view` points into
    bool interlaced = false;          // the decoder's field flags
    bool top_field_first = false;
    FrameRequest::DeviceInput device;  // where `view`'s planes are: device surfaces or host memory
  };
  // A frame to submit, with its neighbours; `owner` keeps all three alive.
  struct Ready {
    Frame cur;
    FrameView prev, next;
    std::shared_ptr<void> owner;
  };

  // Takes the next decoded frame; returns the one before it, now that its next is known.
  std::optional<Ready> Push(Frame next) {
    std::optional<Ready> ready;
    if (cur_) ready = Make(*cur_, next);
    prev_ = std::exchange(cur_, std::move(next));
    return ready;
  }
  // At the end of the stream: the frame held back, with itself as its next.
  std::optional<Ready> Finish() {
    std::optional<Ready> ready;
    if (cur_) ready = Make(*cur_, *cur_);
    prev_.reset();
    cur_.reset();
    return ready;
  }

 private:
  static bool SameMemory(const Frame& a, const Frame& b) {
    return a.device.enabled == b.device.enabled && a.device.p010 == b.device.p010;
  }
  Ready Make(const Frame& cur, const Frame& next_frame) const {
    const Frame& prev = prev_ && SameMemory(*prev_, cur) ? *prev_ : cur;
    const Frame& next = SameMemory(next_frame, cur) ? next_frame : cur;
    auto keep = std::make_shared<std::array<std::shared_ptr<void>, 3>>(
        std::array<std::shared_ptr<void>, 3>{prev.keepalive, cur.keepalive, next.keepalive});
    return Ready{cur, prev.view, next.view, std::move(keep)};
  }

  std::optional<Frame> prev_, cur_;
};

}  // namespace conveyor
