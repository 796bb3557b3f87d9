// Storyboard cells and their WebVTT index (see storyboard_layout.h).
#include "storyboard_layout.h"

#include <cinttypes>
#include <cstdio>

extern "C" {
#include <libavutil/mathematics.h>
}

namespace conveyor {

StoryboardLayout::StoryboardLayout(int columns, int rows, int cell_width, int cell_height, int tb_num, int tb_den)
    : columns_(columns), rows_(rows), cell_width_(cell_width), cell_height_(cell_height), tb_num_(tb_num),
      tb_den_(tb_den) {}

StoryboardLayout::Cell StoryboardLayout::Next(int64_t pts) {
  if (in_sprite_ == 0) {
    ++sprite_;
    sprite_pts_.push_back(pts);
  }
  Cell c;
  c.sprite = sprite_;
  c.x = (in_sprite_ % columns_) * cell_width_;
  c.y = (in_sprite_ / columns_) * cell_height_;
  cues_.push_back({pts, c.sprite, c.x, c.y});
  ++in_sprite_;
  c.fills_sprite = in_sprite_ == columns_ * rows_;
  if (c.fills_sprite) in_sprite_ = 0;
  return c;
}

void StoryboardLayout::CloseSprite() { in_sprite_ = 0; }

int StoryboardLayout::sprites() const { return sprite_ + 1; }

std::string WebVttTime(int64_t pts, int tb_num, int tb_den) {
  // WebVTT has no negative times: a lead-in before zero starts at zero.
  const int64_t ms = pts <= 0 ? 0 : av_rescale_rnd(pts, int64_t{tb_num} * 1000, tb_den, AV_ROUND_NEAR_INF);
  char text[48];
  std::snprintf(text, sizeof text, "%02" PRId64 ":%02" PRId64 ":%02" PRId64 ".%03" PRId64, ms / 3600000,
                ms / 60000 % 60, ms / 1000 % 60, ms % 1000);
  return text;
}

std::string StoryboardLayout::WebVtt(int64_t end_pts) const {
  std::string vtt = "WEBVTT\n";
  for (size_t i = 0; i < cues_.size(); ++i) {
    const Cue& c = cues_[i];
    const int64_t end = i + 1 < cues_.size() ? cues_[i + 1].pts : end_pts;
    vtt += "\n" + WebVttTime(c.pts, tb_num_, tb_den_) + " --> " + WebVttTime(end, tb_num_, tb_den_) + "\n";
    vtt += "sprite_" + std::to_string(c.sprite + 1) + ".jpg#xywh=" + std::to_string(c.x) + "," + std::to_string(c.y) +
           "," + std::to_string(cell_width_) + "," + std::to_string(cell_height_) + "\n";
  }
  return vtt;
}

}  // namespace conveyor
