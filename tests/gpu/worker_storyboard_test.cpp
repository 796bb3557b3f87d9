// Storyboards through each worker: frames placed in a sprite's cells by the tiling stage
// (turned first where asked, one frame in two cells where the grid repeats it), then the
// sprite encoded on its own. Each sprite must equal the host's: a black sprite, each cell
// scaled into it with the tile plan, encoded by the CPU encoder; libjpeg-turbo decodes it
// back to that sprite, and the worker keeps no hold on it afterwards. On a GPU worker this
// shows the tiling kernel and the sprite's ordering across streams give the CPU's bytes.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

#include "cpu_encoder.h"
#include "gpu_encoder.h"
#include "libjpeg_turbo_check.h"
#include "orient_cpu.h"
#include "scale_cpu.h"
#include "synthetic_frame.h"
#include "tile_plan.h"
#include "worker.h"

namespace conveyor {
namespace {

class WorkerStoryboardTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The GPU worker skips only where no device is found; a device whose worker does not
  // start fails the test.
  std::unique_ptr<Worker> Make() {
    if (GetParam() == "cpu") return MakeCpuWorker(WorkerOptions{});
    const GpuProbe probe = ProbeGpus();
    if (probe.devices.empty()) {
      skip_ = probe.unavailable_reason.empty() ? "no device found" : probe.unavailable_reason;
      return nullptr;
    }
    auto w = MakeGpuWorker(0, WorkerOptions{});
    if (!w.ok()) {
      ADD_FAILURE() << "device 0 is present but its worker did not start: " << w.status().ToString();
      return nullptr;
    }
    return std::move(w).value();
  }
  std::string skip_;
};

struct Board {
  PixelFormat format;
  int width, height;  // of the frames, before the turn
  Orientation turn;
  int columns, rows, cell_w, cell_h;
  int frames;  // the last one fills two cells
};

TEST_P(WorkerStoryboardTest, SpritesMatchTheHostTilesAndTheCpuEncoder) {
  auto worker = Make();
  if (!worker && skip_.empty()) return;
  if (!worker) GTEST_SKIP() << "no GPU: " << skip_;
  const Board boards[] = {
      {PixelFormat::kYuv420p, 1280, 720, Orientation{}, 3, 2, 160, 90, 4},    // 5 of 6 cells: one black
      {PixelFormat::kNv12, 640, 360, OrientationFromExif(6), 2, 2, 90, 160, 3},  // turned; full
      {PixelFormat::kRgb24, 161, 93, Orientation{}, 4, 1, 31, 17, 2},          // odd cells, RGB
      {PixelFormat::kYuv444p, 96, 64, Orientation{}, 2, 1, 256, 128, 1},       // cells larger than the frame
  };
  EncodeParams params;
  params.quality = 85;
  CpuJpegEncoder encoder(0);
  int checked = 0;
  for (const Board& b : boards) {
    SCOPED_TRACE(PixelFormatName(b.format));
    std::vector<testing::SyntheticFrame> frames;
    for (int i = 0; i < b.frames; ++i) frames.push_back(testing::MakeSyntheticFrame(b.width, b.height, b.format, 60 + i));
    const int sw = b.columns * b.cell_w, sh = b.rows * b.cell_h;
    auto sprite = worker->NewSprite(b.format, sw, sh, frames[0].view.matrix, frames[0].view.range);
    ASSERT_TRUE(sprite.ok()) << sprite.status().ToString();
    // The host's sprite: black, then each cell.
    std::vector<uint8_t> host(PackedFrameSize(b.format, sw, sh));
    FillBlack(BlackFill(b.format, frames[0].view.range, sw, sh), host.data());
    std::mutex mu;
    std::map<uint64_t, FrameResult> got;
    auto collect = [&](FrameResult&& r) {
      std::lock_guard<std::mutex> lock(mu);
      got[r.id] = std::move(r);
    };
    int cell = 0;
    for (int i = 0; i < b.frames; ++i) {
      FrameRequest req;
      req.id = i;
      req.frame = frames[i].view;
      req.orientation = b.turn;
      Rendition r{b.cell_w, b.cell_h, params};
      r.tiles.sprite = *sprite;
      const int cells = i + 1 == b.frames && cell + 2 <= b.columns * b.rows ? 2 : 1;
      OrientedFrame turned;
      FrameView source = frames[i].view;
      if (!b.turn.identity()) {
        turned = OrientFrameToOwned(frames[i].view, b.turn).value();
        source = turned.view;
      }
      for (int k = 0; k < cells; ++k, ++cell) {
        const int x = (cell % b.columns) * b.cell_w, y = (cell / b.columns) * b.cell_h;
        r.tiles.cells.emplace_back(x, y);
        const ScalePlan plan =
            MakeTilePlan(source.format, source.width, source.height, b.cell_w, b.cell_h, sw, sh, x, y).value();
        ASSERT_TRUE(ScaleFrameOnHost(source, plan, host.data()).ok());
      }
      req.renditions = {r};
      req.on_done = collect;
      ASSERT_TRUE(worker->Submit(std::move(req)).ok()) << "frame " << i;
    }
    FrameRequest encode;
    encode.id = 100;
    encode.frame = (*sprite)->frame();
    encode.sprite = *sprite;
    encode.owner = *sprite;
    encode.renditions = {Rendition{0, 0, params}};
    encode.on_done = collect;
    ASSERT_TRUE(worker->Submit(std::move(encode)).ok());
    worker->Flush();
    for (int i = 0; i < b.frames; ++i) {
      const FrameResult& r = got.at(i);
      ASSERT_TRUE(r.status.ok()) << "frame " << i << ": " << r.status.ToString();
      ASSERT_EQ(r.jpeg.size(), 1u);
      EXPECT_EQ(r.jpeg[0].size(), 0u) << "a frame of tiles has no JPEG of its own";
    }
    const FrameResult& s = got.at(100);
    ASSERT_TRUE(s.status.ok()) << s.status.ToString();
    const FrameView want_view = MakePackedFrameView(host.data(), host.size(), sw, sh, b.format, frames[0].view.matrix,
                                                    frames[0].view.range)
                                    .value();
    const std::vector<uint8_t> want = encoder.Encode(want_view, params).value();
    ASSERT_EQ(s.jpeg.at(0).ToVector(), want) << "the sprite differs from the host's";
    const Status decoded = testing::CheckAgainstLibjpegTurbo(want_view, params, want);
    ASSERT_TRUE(decoded.ok()) << decoded.ToString();
    // Delivered frames keep nothing of it: the sprite's memory goes when its holder lets go.
    EXPECT_EQ(sprite->use_count(), 1) << "the worker still holds the sprite";
    ++checked;
  }
  std::printf("%s worker: %d sprites equal to the host's\n", GetParam().c_str(), checked);
}

TEST_P(WorkerStoryboardTest, RefusesTilesOfAnotherFormatOrOutsideTheSprite) {
  auto worker = Make();
  if (!worker && skip_.empty()) return;
  if (!worker) GTEST_SKIP() << "no GPU: " << skip_;
  const testing::SyntheticFrame frame = testing::MakeSyntheticFrame(64, 48, PixelFormat::kYuv420p, 1);
  auto sprite = worker->NewSprite(PixelFormat::kNv12, 128, 48, frame.view.matrix, frame.view.range);
  ASSERT_TRUE(sprite.ok()) << sprite.status().ToString();
  auto request = [&](std::pair<int, int> cell) {
    FrameRequest req;
    req.frame = frame.view;
    Rendition r{64, 48, EncodeParams{}};
    r.tiles.sprite = *sprite;
    r.tiles.cells = {cell};
    req.renditions = {r};
    req.on_done = [](FrameResult&&) {};
    return req;
  };
  const Status format = worker->Submit(request({0, 0}));
  EXPECT_EQ(format.code(), StatusCode::kInvalidArgument) << format.ToString();
  EXPECT_NE(format.message().find("the sprite nv12"), std::string::npos) << format.ToString();
  auto yuv = worker->NewSprite(PixelFormat::kYuv420p, 128, 48, frame.view.matrix, frame.view.range);
  ASSERT_TRUE(yuv.ok());
  *sprite = *yuv;
  const Status outside = worker->Submit(request({96, 0}));
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument) << outside.ToString();
  EXPECT_NE(outside.message().find("not inside the sprite"), std::string::npos) << outside.ToString();
}

INSTANTIATE_TEST_SUITE_P(Workers, WorkerStoryboardTest, ::testing::Values("cpu", "gpu"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace conveyor
