// Where a storyboard's cells go and what its WebVTT index says: cells fill a sprite's
// grid left to right, then top to bottom, and each cell's cue runs from its output time
// to the next cell's. No worker calls: the session places and encodes (session_output.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace conveyor {

class StoryboardLayout {
 public:
  // A grid of `columns` x `rows` cells of `cell_width` x `cell_height` a sprite; times
  // are pts in `tb_num`/`tb_den` seconds.
  StoryboardLayout(int columns, int rows, int cell_width, int cell_height, int tb_num, int tb_den);

  struct Cell {
    int sprite = 0;  // from 0; the VTT names it sprite_<sprite + 1>.jpg
    int x = 0, y = 0;
    bool fills_sprite = false;  // the sprite's last cell: it is complete after this one
  };
  // The next cell, for an output frame at `pts`.
  Cell Next(int64_t pts);
  // Ends the open sprite early: the next cell starts a new one (its pixel format changed).
  void CloseSprite();
  // Whether the open sprite has cells not yet encoded; the session encodes it at the end.
  bool sprite_open() const { return in_sprite_ > 0; }
  int sprite_width() const { return columns_ * cell_width_; }
  int sprite_height() const { return rows_ * cell_height_; }
  int sprites() const;  // started so far
  int cells() const { return static_cast<int>(cues_.size()); }
  // The first cell's pts of sprite `sprite` (its OutputPacket's pts).
  int64_t SpritePts(int sprite) const { return sprite_pts_[sprite]; }

  // The index, the last cue ending at `end_pts` (the selection's end, on the same clock).
  std::string WebVtt(int64_t end_pts) const;

 private:
  struct Cue {
    int64_t pts;
    int sprite, x, y;
  };
  const int columns_, rows_, cell_width_, cell_height_;
  const int tb_num_, tb_den_;
  int sprite_ = -1;    // the open sprite
  int in_sprite_ = 0;  // its cells so far; 0: the next cell starts a sprite
  std::vector<Cue> cues_;
  std::vector<int64_t> sprite_pts_;
};

// "HH:MM:SS.mmm" of `pts` x tb_num / tb_den seconds, rounded to the nearest millisecond
// (a time before zero is zero: WebVTT has none).
std::string WebVttTime(int64_t pts, int tb_num, int tb_den);

}  // namespace conveyor
