// Finished frames, handed over in submission order within each stream
// (FrameRequest::stream; docs/DESIGN.md, In-order hand-over): a frame waits only for the
// earlier frames of its own stream, so a slow frame of one session does not hold back
// another session's. Whichever thread finishes a frame hands over every frame that
// became ready; only one thread hands over at a time, so on_done calls never overlap.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "worker.h"

namespace conveyor {

// A frame whose worker is done with it, waiting for its turn.
struct FinishedFrame {
  uint64_t stream = 0, sequence = 0;
  std::function<void(FrameResult&&)> on_done;
  FrameResult result;
};

class InOrderHandover {
 public:
  // The sequence number of a frame submitted to `stream` now (0, 1, ... per stream).
  uint64_t Enter(uint64_t stream);

  // Adds a finished frame (its sequence number from Enter). True when the caller is now
  // the one thread handing over: it then takes frames with TakeReady() until there are
  // none. False when another thread is handing over; that one takes this frame too.
  bool Add(FinishedFrame&& frame);

  // The next frame whose turn it is, for the thread handing over; nullopt when there is
  // none, and then that thread is no longer the one handing over.
  std::optional<FinishedFrame> TakeReady();

 private:
  struct StreamOrder {
    uint64_t submitted = 0;                      // sequence numbers given out
    uint64_t next = 0;                           // the next to hand over
    std::map<uint64_t, FinishedFrame> finished;  // waiting for earlier ones
  };

  std::mutex mu_;
  std::unordered_map<uint64_t, StreamOrder> streams_;  // streams with frames in flight
  std::deque<FinishedFrame> ready_;                    // in order, to hand over
  bool handing_over_ = false;
};

}  // namespace conveyor
