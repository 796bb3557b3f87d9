// A storyboard's output (see session.h, TileSpec): each output frame is placed in cells
// of the open sprite by the worker's tiling stage, each sprite is encoded by the worker
// once full (or at the end, its unused cells black), and the WebVTT index follows the
// last sprite.
#include <algorithm>
#include <utility>

#include "session.h"

namespace conveyor {

Status Session::SubmitTiles(KeptFrame&& frame, OutputTimes times) {
  FrameRequest base;
  base.frame = frame.view;
  base.orientation = turn_;
  if (frame.deinterlace) base.deinterlace = *frame.deinterlace;
  base.device = frame.device;
  // The worker places the frame as it encodes a frame: turned first, so the sprite takes
  // the turned format (a decoder that changes format mid-stream starts a new sprite).
  const PixelFormat format = TurnedFormat(base);
  if (sprite_ != nullptr && sprite_->frame().format != format) {
    RETURN_IF_ERROR(SubmitSprite());
    storyboard_->CloseSprite();
  }
  std::shared_ptr<const void> owner = std::move(frame.keepalive);
  std::function<void()> released = std::move(frame.on_input_released);
  // A frame the frame_rate grid repeats fills several cells, in one request a sprite.
  for (int64_t k = 0; k < times.count;) {
    if (sprite_ == nullptr) {
      ASSIGN_OR_RETURN(sprite_, lane_->worker().NewSprite(format, storyboard_->sprite_width(),
                                                          storyboard_->sprite_height(), frame.view.matrix,
                                                          frame.view.range));
    }
    FrameRequest request = base;
    Rendition tiles = renditions_[0];
    tiles.tiles.sprite = sprite_;
    const int64_t first = times.pts + k;
    bool filled = false;
    for (; k < times.count && !filled; ++k) {
      const StoryboardLayout::Cell cell = storyboard_->Next(times.pts + k);
      tiles.tiles.cells.emplace_back(cell.x, cell.y);
      filled = cell.fills_sprite;
      last_cell_pts_ = times.pts + k;
    }
    request.renditions = {std::move(tiles)};
    request.owner = owner;
    if (k == times.count) request.on_input_released = std::move(released);  // with the frame's last request
    RETURN_IF_ERROR(SubmitToLane(std::move(request), OutputTimes{first, 0, OutputTimes::Kind::kTiles}));
    if (filled) RETURN_IF_ERROR(SubmitSprite());
  }
  return OkStatus();
}

Status Session::SubmitSprite() {
  std::shared_ptr<Sprite> sprite = std::exchange(sprite_, nullptr);
  if (sprite == nullptr) return OkStatus();
  FrameRequest request;
  request.frame = sprite->frame();
  request.sprite = sprite;
  request.owner = sprite;
  Rendition whole = renditions_[0];  // the sprite at its own size: no scaling, no tiles
  whole.width = whole.height = 0;
  whole.tiles = {};
  request.renditions = {std::move(whole)};
  const int index = storyboard_->sprites() - 1;
  return SubmitToLane(std::move(request), OutputTimes{storyboard_->SpritePts(index), 1, OutputTimes::Kind::kSprite});
}

Status Session::FinishStoryboard(int64_t end_pts) {
  if (storyboard_->sprite_open()) RETURN_IF_ERROR(SubmitSprite());
  storyboard_vtt_ = storyboard_->WebVtt(std::max(end_pts, last_cell_pts_));
  return OkStatus();
}

void Session::SendStoryboard() {
  // FinishStoryboard made it: the input's end reaches FinishKept on every path that ends OK.
  size_t offset = 0;
  do {
    const size_t n = std::min(options_.message_bytes, storyboard_vtt_.size() - offset);
    v1::TranscodeResponse r;
    v1::Storyboard* board = r.mutable_storyboard();
    board->set_webvtt(storyboard_vtt_.substr(offset, n));
    board->set_sprites(static_cast<uint32_t>(storyboard_->sprites()));
    board->set_cells(static_cast<uint32_t>(storyboard_->cells()));
    offset += n;
    Send(std::move(r));
  } while (offset < storyboard_vtt_.size());
}

}  // namespace conveyor
