// What the worker contract tests share (worker_test.cpp, worker_rendition_test.cpp): the
// fixture that makes the CPU or the GPU worker, a collector of results, mixed frames and
// rendition jobs, and the checks against the CPU encoder and libjpeg-turbo.
#pragma once

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <utility>

#include "cpu_encoder.h"
#include "gpu_encoder.h"
#include "deinterlace_cpu.h"
#include "libjpeg_turbo_check.h"
#include "orient_cpu.h"
#include "scale_cpu.h"
#include "synthetic_frame.h"
#include "worker.h"

namespace conveyor::worker_testing {

// Keeps each frame's result. A collector flushes the worker its callbacks were made for
// before it goes, so that a test which returns early on a failure (with frames still in
// flight) leaves no callback to write into it afterwards.
struct Collector {
  std::mutex mu;
  std::map<uint64_t, FrameResult> results;
  std::vector<uint64_t> order;
  Worker* worker = nullptr;
  Collector() = default;
  Collector(const Collector&) = delete;
  Collector& operator=(const Collector&) = delete;
  ~Collector() {
    if (worker != nullptr) worker->Flush();
  }
  std::function<void(FrameResult&&)> Callback(Worker& w) {
    worker = &w;
    return [this](FrameResult&& r) {
      std::lock_guard<std::mutex> lock(mu);
      order.push_back(r.id);
      results[r.id] = std::move(r);
    };
  }
};

class WorkerTest : public ::testing::TestWithParam<std::string> {
 protected:
  // The GPU worker skips only where no device is found; a device that is there and whose
  // worker does not start (an Init() failure, a kernel that does not load) fails the test.
  std::unique_ptr<Worker> Make(WorkerOptions options) {
    if (GetParam() == "cpu") return MakeCpuWorker(options);
    const GpuProbe probe = ProbeGpus();
    if (probe.devices.empty()) {
      skip_ = probe.unavailable_reason.empty() ? "no device found" : probe.unavailable_reason;
      return nullptr;
    }
    auto w = MakeGpuWorker(0, options);
    if (!w.ok()) {
      ADD_FAILURE() << "device 0 (" << probe.devices[0].name
                    << ") is present but its worker did not start: " << w.status().ToString();
      return nullptr;
    }
    std::printf("worker: %s\n", (*w)->Describe().c_str());
    return std::move(w).value();
  }
  std::string skip_;
};

#define MAKE_OR_SKIP(var, options)                      \
  auto var = Make(options);                             \
  if (!var && skip_.empty()) return;                    \
  if (!var) GTEST_SKIP() << "no GPU: " << skip_

// A mixed stream of frames: sizes, formats and parameters change from frame to frame.
struct Case {
  testing::SyntheticFrame frame;
  EncodeParams params;
};
inline std::vector<Case> MixedCases(int n) {
  const int sizes[][2] = {{1920, 1080}, {1280, 720}, {17, 9}, {640, 360}, {3840, 2160}};
  const PixelFormat formats[] = {PixelFormat::kYuv420p, PixelFormat::kNv12, PixelFormat::kRgb24,
                                 PixelFormat::kYuv444p, PixelFormat::kBgra};
  std::vector<Case> cases;
  for (int i = 0; i < n; ++i) {
    Case c;
    const auto& sz = sizes[i % 5];
    c.frame = testing::MakeSyntheticFrame(sz[0], sz[1], formats[(i / 2) % 5], 100 + i);
    c.params.quality = 50 + (i * 7) % 51;
    c.params.subsampling = static_cast<Subsampling>(i % 3);
    cases.push_back(std::move(c));
  }
  return cases;
}

// Submits every case as one single-rendition frame (id = index) and waits for delivery.
// Frame i goes to stream stream_of(i) (one stream when not given).
inline void SubmitAll(Worker& worker, const std::vector<Case>& cases, Collector& got,
               const std::function<uint64_t(size_t)>& stream_of = nullptr) {
  for (size_t i = 0; i < cases.size(); ++i) {
    FrameRequest req;
    req.id = i;
    req.frame = cases[i].frame.view;
    req.renditions = {Rendition{0, 0, cases[i].params}};
    if (stream_of) req.stream = stream_of(i);
    req.on_done = got.Callback(worker);
    ASSERT_TRUE(worker.Submit(std::move(req)).ok()) << "frame " << i;
  }
  worker.Flush();
}

// Each output equals the CPU encoder's and passes libjpeg-turbo's check against its
// source; prints how many were decoded (tests/gpu/h200_run.sh requires some).
inline void ExpectMatchesCpuEncoder(const std::vector<Case>& cases, Collector& got) {
  CpuJpegEncoder reference(0);
  for (size_t i = 0; i < cases.size(); ++i) {
    auto want = reference.Encode(cases[i].frame.view, cases[i].params);
    ASSERT_TRUE(want.ok());
    const FrameResult& r = got.results.at(i);
    ASSERT_TRUE(r.status.ok()) << "frame " << i << ": " << r.status.ToString();
    ASSERT_EQ(r.jpeg.size(), 1u);
    const std::vector<uint8_t> jpeg = r.jpeg[0].ToVector();
    ASSERT_EQ(jpeg, *want) << "frame " << i << " differs from the CPU encoder";
    const Status decoded = testing::CheckAgainstLibjpegTurbo(cases[i].frame.view, cases[i].params, jpeg);
    ASSERT_TRUE(decoded.ok()) << "frame " << i << ": " << decoded.ToString();
  }
  std::printf("libjpeg-turbo checked outputs: %zu\n", cases.size());
}

struct Job {
  testing::SyntheticFrame frame;
  std::vector<Rendition> renditions;
  Orientation orientation;  // the frame is turned before its renditions
  // Deinterlacing, first of all: the frames before and after, and the kept field.
  std::shared_ptr<testing::SyntheticFrame> prev, next;
  bool top_field_first = true;
};

inline Rendition MakeRendition(int w, int h, int q, Subsampling ss) {
  Rendition r{w, h, EncodeParams{}};
  r.params.quality = q;
  r.params.subsampling = ss;
  return r;
}

// Submits jobs [begin, end), or every job (id = index), without waiting.
inline void SubmitJobs(Worker& worker, const std::vector<Job>& jobs, Collector& got, size_t begin = 0,
                size_t end = SIZE_MAX) {
  for (size_t i = begin; i < std::min(end, jobs.size()); ++i) {
    FrameRequest req;
    req.id = i;
    req.frame = jobs[i].frame.view;
    req.renditions = jobs[i].renditions;
    req.orientation = jobs[i].orientation;
    if (jobs[i].prev) {
      req.deinterlace.enabled = true;
      req.deinterlace.top_field_first = jobs[i].top_field_first;
      req.deinterlace.prev = jobs[i].prev->view;
      req.deinterlace.next = jobs[i].next->view;
    }
    req.on_done = got.Callback(worker);
    ASSERT_TRUE(worker.Submit(std::move(req)).ok()) << "job " << i;
  }
}

// Every rendition of every job equals turning (where the job asks) and scaling on the CPU
// and encoding that, and passes libjpeg-turbo's check against the scaled frame; returns
// how many were checked.
inline int ExpectRenditionsMatchCpu(const std::vector<Job>& jobs, Collector& got) {
  CpuJpegEncoder reference(0);
  int checked = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const FrameResult& r = got.results.at(i);
    EXPECT_TRUE(r.status.ok()) << "job " << i << ": " << r.status.ToString();
    if (!r.status.ok() || r.jpeg.size() != jobs[i].renditions.size()) {
      ADD_FAILURE() << "job " << i << ": " << r.jpeg.size() << " outputs";
      continue;
    }
    DeinterlacedFrame whole;
    if (jobs[i].prev) {
      auto w = DeinterlaceFrameToOwned(jobs[i].prev->view, jobs[i].frame.view, jobs[i].next->view,
                                       jobs[i].top_field_first);
      EXPECT_TRUE(w.ok()) << w.status().ToString();
      if (!w.ok()) continue;
      whole = std::move(w).value();
    }
    const FrameView& made_whole = jobs[i].prev ? whole.view : jobs[i].frame.view;
    OrientedFrame turned;
    if (!jobs[i].orientation.identity()) {
      auto t = OrientFrameToOwned(made_whole, jobs[i].orientation);
      EXPECT_TRUE(t.ok()) << t.status().ToString();
      if (!t.ok()) continue;
      turned = std::move(t).value();
    }
    const FrameView& src = jobs[i].orientation.identity() ? made_whole : turned.view;
    for (size_t k = 0; k < jobs[i].renditions.size(); ++k) {
      const Rendition& rd = jobs[i].renditions[k];
      const int w = rd.width ? rd.width : src.width, h = rd.height ? rd.height : src.height;
      auto plan = MakeScalePlan(src.format, src.width, src.height, w, h);
      EXPECT_TRUE(plan.ok()) << plan.status().ToString();
      if (!plan.ok()) continue;
      auto scaled = ScaleFrameToOwned(src, *plan);
      EXPECT_TRUE(scaled.ok()) << scaled.status().ToString();
      if (!scaled.ok()) continue;
      auto want = reference.Encode(scaled->view, rd.params);
      EXPECT_TRUE(want.ok());
      if (!want.ok()) continue;
      const std::vector<uint8_t> jpeg = r.jpeg[k].ToVector();
      EXPECT_EQ(jpeg, *want) << "job " << i << " rendition " << k << " (" << w << "x" << h << ")";
      const Status decoded = testing::CheckAgainstLibjpegTurbo(scaled->view, rd.params, jpeg);
      EXPECT_TRUE(decoded.ok()) << "job " << i << " rendition " << k << ": " << decoded.ToString();
      ++checked;
    }
  }
  return checked;
}

// `n` 1080p yuv420p frames, each encoded at its size, 1280x720 and 640x360 (4:4:4).
inline std::vector<Job> LadderJobs(int n, uint32_t first_seed) {
  std::vector<Job> jobs;
  for (int i = 0; i < n; ++i) {
    jobs.push_back({testing::MakeSyntheticFrame(1920, 1080, PixelFormat::kYuv420p, first_seed + i),
                    {MakeRendition(0, 0, 85, Subsampling::k420), MakeRendition(1280, 720, 80, Subsampling::k420),
                     MakeRendition(640, 360, 75, Subsampling::k444)}});
  }
  return jobs;
}

}  // namespace conveyor::worker_testing
