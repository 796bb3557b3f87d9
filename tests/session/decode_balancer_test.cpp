// DecodeBalancer's decisions from a scripted load: engines until they are the bottleneck
// with CPU cores to spare, a burst between readings on the engines, one move a move
// interval and the newest engine session first, never while an engine is free, and nothing
// at all where the load is not known.
#include "decode_balancer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

namespace conveyor {
namespace {

using Clock = DecodeBalancer::Clock;
using std::chrono::milliseconds;

struct Script {
  DecodeLoad load;
  int readings = 0;
  DecodeBalancer::Sampler Sampler() {
    return [this] {
      ++readings;
      return load;
    };
  }
};

DecodeLoad Load(double busy, double idle_cores) {
  DecodeLoad l;
  l.engine_busy = {busy};
  l.cpu_idle_cores = idle_cores;
  return l;
}

TEST(DecodeBalancer, WithoutALoadReadingEverySessionGoesToTheEngines) {
  DecodeBalancer b(1, nullptr);
  const Clock::time_point t0 = Clock::now();
  auto ticket = b.Register(0);
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(b.Place(0, t0 + milliseconds(100 * i)), "");
    b.Tick(0, t0 + milliseconds(100 * i));
  }
  EXPECT_FALSE(ticket->move_requested());
  Script unknown;
  unknown.load = Load(-1, 12);
  DecodeBalancer c(1, unknown.Sampler());
  EXPECT_EQ(c.Place(0, t0), "");
}

TEST(DecodeBalancer, TheCpuDecodesOnceTheEnginesAreTheBottleneckAndCoresAreIdle) {
  Script s;
  s.load = Load(0.5, 8);
  DecodeBalancer b(1, s.Sampler());
  Clock::time_point t = Clock::now();
  EXPECT_EQ(b.Place(0, t), "");
  s.load = Load(0.95, 8);
  t += milliseconds(600);
  const std::string why = b.Place(0, t);
  EXPECT_NE(why.find("bottleneck"), std::string::npos) << why;
  EXPECT_NE(why.find("95 % busy"), std::string::npos) << why;
  // Busy engines but no idle cores: the engines still take the session.
  s.load = Load(0.99, 1.5);
  t += milliseconds(600);
  EXPECT_EQ(b.Place(0, t), "");
  EXPECT_EQ(s.readings, 3);
}

TEST(DecodeBalancer, ABurstBetweenReadingsStaysOnTheEngines) {
  Script s;
  s.load = Load(0.64, 10);
  DecodeBalancer b(1, s.Sampler());
  std::vector<std::shared_ptr<DecodeBalancer::Ticket>> on_engines;
  for (int i = 0; i < 4; ++i) on_engines.push_back(b.Register(0));
  const Clock::time_point t = Clock::now();
  // 4 sessions at 64 %: 28 more in the same instant are not guessed at 16 % each (which
  // would send all but two to the CPU); the next reading decides.
  for (int i = 0; i < 28; ++i) {
    EXPECT_EQ(b.Place(0, t), "") << i;
    on_engines.push_back(b.Register(0));
  }
  EXPECT_EQ(s.readings, 1);
  s.load = Load(0.93, 10);
  EXPECT_NE(b.Place(0, t + milliseconds(600)), "");
  EXPECT_EQ(s.readings, 2);
}

TEST(DecodeBalancer, MovesTheNewestEngineSessionOneAMoveInterval) {
  Script s;
  s.load = Load(0.97, 6);
  DecodeBalancer::Policy p;
  p.sample_every = milliseconds(500);
  p.move_every = milliseconds(1000);
  DecodeBalancer b(1, s.Sampler(), p);
  auto first = b.Register(0), second = b.Register(0), third = b.Register(0);
  Clock::time_point t = Clock::now();
  b.Tick(0, t);
  EXPECT_TRUE(third->move_requested());
  EXPECT_FALSE(second->move_requested());
  third.reset();  // the session moved and gave its ticket back
  b.Tick(0, t + milliseconds(600));  // a new reading, but no move is due yet
  EXPECT_FALSE(second->move_requested());
  b.Tick(0, t + milliseconds(1100));
  EXPECT_TRUE(second->move_requested());
  EXPECT_FALSE(first->move_requested());
  EXPECT_EQ(b.moves(), 2u);
  // The engines have room again: no more moves.
  s.load = Load(0.7, 6);
  b.Tick(0, t + milliseconds(2500));
  EXPECT_FALSE(first->move_requested());
}

TEST(DecodeBalancer, OnlyTheBottleneckedWorkerMovesSessions) {
  Script s;
  s.load.engine_busy = {0.3, 0.98};
  s.load.cpu_idle_cores = 6;
  DecodeBalancer b(2, s.Sampler());
  auto on0 = b.Register(0), on1 = b.Register(1);
  const Clock::time_point t = Clock::now();
  b.Tick(0, t);
  b.Tick(1, t);
  EXPECT_FALSE(on0->move_requested());
  EXPECT_TRUE(on1->move_requested());
}

TEST(DecodeBalancer, WithAnEngineFreeNoReadingMakesTheEnginesTheBottleneck) {
  // NVML still reads a burst that has just ended: the engines full, with none of the
  // daemon's sessions on them.
  Script s;
  s.load = Load(0.97, 12);
  DecodeBalancer b(1, s.Sampler());
  b.SetEngines(0, 3);
  std::vector<std::shared_ptr<DecodeBalancer::Ticket>> on_engines;
  Clock::time_point t = Clock::now();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(b.Place(0, t), "") << i;
    b.Tick(0, t);  // with i sessions on the engines
    on_engines.push_back(b.Register(0));
    t += milliseconds(600);
  }
  EXPECT_EQ(b.moves(), 0u);
  for (const auto& ticket : on_engines) EXPECT_FALSE(ticket->move_requested());
  // Three sessions on three engines, and still full: the next goes to the CPU, and the
  // newest engine session is asked to move.
  const std::string why = b.Place(0, t);
  EXPECT_NE(why.find("3 of this daemon's sessions on them"), std::string::npos) << why;
  b.Tick(0, t);
  EXPECT_TRUE(on_engines.back()->move_requested());
  // Without a count (0), the reading alone decides, as before.
  DecodeBalancer c(1, s.Sampler());
  c.SetEngines(0, 0);
  EXPECT_NE(c.Place(0, t), "");
}

}  // namespace
}  // namespace conveyor
