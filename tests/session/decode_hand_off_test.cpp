#include "decode_hand_off.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace conveyor {
namespace {

using namespace std::chrono_literals;

TEST(DecodeHandOff, ItemsComeInOrderAndTheDecoderWaitsAtTheDepth) {
  DecodeHandOff<int> hand_off(2);
  std::atomic<int> pushed{0};
  std::thread decoder([&] {
    for (int i = 0; i < 5; ++i) {
      ASSERT_TRUE(hand_off.Push(i));
      pushed = i + 1;
    }
  });
  // Two fit; the third waits for the pipeline.
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  while (pushed < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(pushed.load(), 2);
  EXPECT_EQ(hand_off.waiting(), 2u);
  for (int i = 0; i < 5; ++i) {
    std::optional<int> item = hand_off.Pop();
    ASSERT_TRUE(item.has_value());
    EXPECT_EQ(*item, i);
  }
  decoder.join();
  EXPECT_EQ(hand_off.waiting(), 0u);
}

TEST(DecodeHandOff, StopRefusesAWaitingDecoderAndDropsWhatWaits) {
  DecodeHandOff<std::shared_ptr<int>> hand_off(1);
  auto first = std::make_shared<int>(1);
  std::weak_ptr<int> watch = first;
  ASSERT_TRUE(hand_off.Push(std::move(first)));
  std::atomic<bool> refused{false};
  std::thread decoder([&] { refused = !hand_off.Push(std::make_shared<int>(2)); });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(refused.load());  // still waiting for room
  hand_off.Stop();
  decoder.join();
  EXPECT_TRUE(refused.load());
  EXPECT_TRUE(watch.expired()) << "the item waiting at Stop was kept";
  EXPECT_TRUE(hand_off.stopped());
  EXPECT_FALSE(hand_off.Pop().has_value());
  EXPECT_FALSE(hand_off.Push(std::make_shared<int>(3)));
}

TEST(DecodeHandOff, StopWakesAWaitingPipeline) {
  DecodeHandOff<int> hand_off(3);
  std::atomic<bool> woke{false};
  std::thread pipeline([&] {
    EXPECT_FALSE(hand_off.Pop().has_value());
    woke = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(woke.load());
  hand_off.Stop();
  pipeline.join();
  EXPECT_TRUE(woke.load());
}

}  // namespace
}  // namespace conveyor
