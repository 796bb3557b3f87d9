// InOrderHandover: frames come out in submission order within their stream, a stream's
// unfinished frame holds back only that stream, and one thread hands over at a time.
#include "in_order_handover.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace conveyor {
namespace {

FinishedFrame Finished(uint64_t stream, uint64_t sequence, uint64_t id) {
  FinishedFrame f;
  f.stream = stream;
  f.sequence = sequence;
  f.result.id = id;
  return f;
}

// Takes every ready frame, as the thread handing over does; returns their ids.
std::vector<uint64_t> Drain(InOrderHandover& h) {
  std::vector<uint64_t> ids;
  while (std::optional<FinishedFrame> f = h.TakeReady()) ids.push_back(f->result.id);
  return ids;
}

TEST(InOrderHandover, AStreamsFramesComeOutInSubmissionOrder) {
  InOrderHandover h;
  const uint64_t s0 = h.Enter(7), s1 = h.Enter(7), s2 = h.Enter(7);
  EXPECT_EQ(s0, 0u);
  EXPECT_EQ(s1, 1u);
  EXPECT_EQ(s2, 2u);
  // The last two finish first: nothing is ready until the first has.
  ASSERT_TRUE(h.Add(Finished(7, s2, 102)));
  EXPECT_TRUE(Drain(h).empty());
  ASSERT_TRUE(h.Add(Finished(7, s1, 101)));
  EXPECT_TRUE(Drain(h).empty());
  ASSERT_TRUE(h.Add(Finished(7, s0, 100)));
  EXPECT_EQ(Drain(h), (std::vector<uint64_t>{100, 101, 102}));
  // The stream was forgotten once empty; it numbers from 0 again.
  EXPECT_EQ(h.Enter(7), 0u);
}

TEST(InOrderHandover, AnUnfinishedFrameHoldsBackOnlyItsOwnStream) {
  InOrderHandover h;
  const uint64_t slow = h.Enter(1);
  const uint64_t a = h.Enter(2), b = h.Enter(2);
  ASSERT_TRUE(h.Add(Finished(2, a, 200)));
  EXPECT_FALSE(h.Add(Finished(2, b, 201)));  // the first adder has not drained yet
  EXPECT_EQ(Drain(h), (std::vector<uint64_t>{200, 201}));
  ASSERT_TRUE(h.Add(Finished(1, slow, 100)));
  EXPECT_EQ(Drain(h), (std::vector<uint64_t>{100}));
}

TEST(InOrderHandover, OneThreadHandsOverAndTakesWhatOthersAdd) {
  InOrderHandover h;
  const uint64_t a = h.Enter(1), b = h.Enter(1), c = h.Enter(3);
  ASSERT_TRUE(h.Add(Finished(1, a, 1)));  // this caller hands over now
  std::optional<FinishedFrame> first = h.TakeReady();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->result.id, 1u);
  // Frames finished meanwhile on other threads: those threads do not hand over.
  EXPECT_FALSE(h.Add(Finished(1, b, 2)));
  EXPECT_FALSE(h.Add(Finished(3, c, 3)));
  EXPECT_EQ(Drain(h), (std::vector<uint64_t>{2, 3}));
  // The drain ended the hand-over: the next adder takes it.
  EXPECT_TRUE(h.Add(Finished(5, h.Enter(5), 4)));
  EXPECT_EQ(Drain(h), (std::vector<uint64_t>{4}));
}

}  // namespace
}  // namespace conveyor
