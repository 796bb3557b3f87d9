// Storyboard cells and their index: cells fill a sprite row by row, a full grid or a
// closed sprite starts the next, and the WebVTT index has a cue per cell, from its time to
// the next cell's, in the timestamp form of the WebVTT standard (HH:MM:SS.mmm).
#include <gtest/gtest.h>

#include "storyboard_layout.h"

namespace conveyor {
namespace {

TEST(StoryboardLayout, FillsRowByRowThenStartsTheNextSprite) {
  StoryboardLayout layout(3, 2, 160, 90, 1, 1);
  const int want[][3] = {{0, 0, 0}, {0, 160, 0}, {0, 320, 0}, {0, 0, 90}, {0, 160, 90}, {0, 320, 90}, {1, 0, 0}};
  for (int i = 0; i < 7; ++i) {
    const StoryboardLayout::Cell c = layout.Next(i * 10);
    EXPECT_EQ(c.sprite, want[i][0]) << i;
    EXPECT_EQ(c.x, want[i][1]) << i;
    EXPECT_EQ(c.y, want[i][2]) << i;
    EXPECT_EQ(c.fills_sprite, i == 5) << i;
  }
  EXPECT_EQ(layout.sprites(), 2);
  EXPECT_TRUE(layout.sprite_open());
  EXPECT_EQ(layout.SpritePts(1), 60);
  EXPECT_EQ(layout.sprite_width(), 480);
  EXPECT_EQ(layout.sprite_height(), 180);
}

TEST(StoryboardLayout, ACloseSpriteStartsTheNextCellInANewOne) {
  StoryboardLayout layout(2, 2, 64, 48, 1, 25);
  layout.Next(0);
  layout.CloseSprite();  // a decoder that changed pixel format
  EXPECT_FALSE(layout.sprite_open());
  const StoryboardLayout::Cell c = layout.Next(5);
  EXPECT_EQ(c.sprite, 1);
  EXPECT_EQ(c.x, 0);
  EXPECT_EQ(c.y, 0);
  EXPECT_EQ(layout.WebVtt(6),
            "WEBVTT\n"
            "\n00:00:00.000 --> 00:00:00.200\nsprite_1.jpg#xywh=0,0,64,48\n"
            "\n00:00:00.200 --> 00:00:00.240\nsprite_2.jpg#xywh=0,0,64,48\n");
}

TEST(StoryboardLayout, TimesRoundToTheNearestMillisecondAndNeverGoBelowZero) {
  EXPECT_EQ(WebVttTime(1, 1, 3), "00:00:00.333");
  EXPECT_EQ(WebVttTime(2, 1, 3), "00:00:00.667");
  EXPECT_EQ(WebVttTime(1001, 1, 30000), "00:00:00.033");
  EXPECT_EQ(WebVttTime(3723004, 1, 1000), "01:02:03.004");
  EXPECT_EQ(WebVttTime(360000, 1, 1), "100:00:00.000");  // hours keep going past 99
  EXPECT_EQ(WebVttTime(-5, 1, 1000), "00:00:00.000");
  EXPECT_EQ(WebVttTime(int64_t{1} << 40, 1, 90000), "3393:33:15.864");
}

TEST(StoryboardLayout, TheLastCueEndsWhereTheCallerSays) {
  StoryboardLayout layout(10, 10, 160, 90, 10, 1);  // pts in 10 s steps: fps=1/10
  for (int i = 0; i < 3; ++i) layout.Next(i);
  const std::string vtt = layout.WebVtt(3);
  EXPECT_NE(vtt.find("00:00:20.000 --> 00:00:30.000\nsprite_1.jpg#xywh=320,0,160,90\n"), std::string::npos) << vtt;
  EXPECT_EQ(layout.cells(), 3);
}

}  // namespace
}  // namespace conveyor
