// ByteQueue: reads across chunk boundaries, the byte bound, blocking and non-blocking
// pushes, end of input and cancellation from either side.
#include "byte_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <numeric>
#include <thread>

extern "C" {
#include <libavutil/error.h>
}

namespace {

using conveyor::StatusCode;
using conveyor::media::ByteQueue;
using namespace std::chrono_literals;

std::vector<uint8_t> Bytes(size_t n, uint8_t first = 0) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

TEST(ByteQueue, ReadsAcrossChunkBoundariesInOrder) {
  ByteQueue q(1024);
  ASSERT_TRUE(q.Push(Bytes(5, 0)).ok());
  ASSERT_TRUE(q.Push(Bytes(7, 5)).ok());
  ASSERT_TRUE(q.Push({}).ok());  // empty chunks are dropped
  q.Close();
  uint8_t buf[4];
  std::vector<uint8_t> got;
  for (;;) {
    const int n = q.Read(buf, sizeof(buf));
    if (n == AVERROR_EOF) break;
    ASSERT_GT(n, 0);
    got.insert(got.end(), buf, buf + n);
  }
  EXPECT_EQ(got, Bytes(12, 0));
  EXPECT_EQ(q.bytes_read(), 12u);
  EXPECT_EQ(q.Read(buf, sizeof(buf)), AVERROR_EOF);  // stays at EOF
}

TEST(ByteQueue, TryPushRefusesWhatDoesNotFitAndKeepsTheChunk) {
  ByteQueue q(1000);
  std::vector<uint8_t> a = Bytes(400), b = Bytes(400), c = Bytes(400);
  EXPECT_TRUE(q.TryPush(a));
  EXPECT_TRUE(q.TryPush(b));
  EXPECT_FALSE(q.TryPush(c));  // 800 + 400 > 1000
  EXPECT_EQ(c.size(), 400u);   // untouched, for the caller to retry
  EXPECT_EQ(q.queued_bytes(), 800u);
  uint8_t buf[300];
  EXPECT_EQ(q.Read(buf, sizeof(buf)), 300);
  EXPECT_TRUE(q.TryPush(c));  // 500 + 400 fits
  EXPECT_LE(q.peak_bytes(), q.capacity());
}

TEST(ByteQueue, StaysWithinItsByteBoundUnderAFastProducer) {
  constexpr size_t kCapacity = 10000;
  ByteQueue q(kCapacity);
  std::thread producer([&] {
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(q.Push(Bytes(1 + (i * 37) % 3000)).ok());
    q.Close();
  });
  uint8_t buf[512];
  size_t total = 0;
  for (;;) {
    const int n = q.Read(buf, sizeof(buf));
    if (n == AVERROR_EOF) break;
    ASSERT_GT(n, 0);
    total += static_cast<size_t>(n);
    if (total % 7 == 0) std::this_thread::sleep_for(50us);  // a slower reader
  }
  producer.join();
  size_t expected = 0;
  for (int i = 0; i < 200; ++i) expected += 1 + (i * 37) % 3000;
  EXPECT_EQ(total, expected);
  EXPECT_LE(q.peak_bytes(), kCapacity);
  EXPECT_GT(q.peak_bytes(), kCapacity / 2);  // the producer did run ahead and was held back
}

TEST(ByteQueue, PushBlocksUntilTheReaderFreesSpace) {
  ByteQueue q(100);
  ASSERT_TRUE(q.Push(Bytes(80)).ok());
  std::atomic<bool> pushed{false};
  std::thread producer([&] {
    EXPECT_TRUE(q.Push(Bytes(50)).ok());
    pushed = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(pushed.load());
  uint8_t buf[40];
  EXPECT_EQ(q.Read(buf, sizeof(buf)), 40);  // 40 + 50 fits now
  producer.join();
  EXPECT_TRUE(pushed.load());
  EXPECT_EQ(q.queued_bytes(), 90u);
}

TEST(ByteQueue, AChunkLargerThanTheCapacityOnlyGoesIntoAnEmptyQueue) {
  ByteQueue q(100);
  std::vector<uint8_t> big = Bytes(250);
  std::vector<uint8_t> small = Bytes(10);
  ASSERT_TRUE(q.TryPush(small));
  EXPECT_FALSE(q.TryPush(big));
  uint8_t buf[16];
  EXPECT_EQ(q.Read(buf, sizeof(buf)), 10);
  EXPECT_TRUE(q.TryPush(big));
  EXPECT_EQ(q.peak_bytes(), 250u);  // max(capacity, largest chunk)
}

TEST(ByteQueue, OnSpaceIsCalledWhenARefusedChunkFits) {
  std::atomic<int> calls{0};
  ByteQueue q(100, [&] { ++calls; });
  std::vector<uint8_t> a = Bytes(90), b = Bytes(60);
  ASSERT_TRUE(q.TryPush(a));
  ASSERT_FALSE(q.TryPush(b));
  uint8_t buf[20];
  EXPECT_EQ(q.Read(buf, 20), 20);  // 70 + 60 > 100: not yet
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(q.Read(buf, 20), 20);  // 50 + 60 > 100
  EXPECT_EQ(q.Read(buf, 20), 20);  // 30 + 60 fits
  EXPECT_EQ(calls.load(), 1);
  EXPECT_TRUE(q.TryPush(b));
}

TEST(ByteQueue, CloseEndsInputAfterTheRest) {
  ByteQueue q(100);
  ASSERT_TRUE(q.Push(Bytes(3)).ok());
  q.Close();
  EXPECT_EQ(q.Push(Bytes(1)).code(), StatusCode::kFailedPrecondition);
  uint8_t buf[8];
  EXPECT_EQ(q.Read(buf, sizeof(buf)), 3);
  EXPECT_EQ(q.Read(buf, sizeof(buf)), AVERROR_EOF);
}

TEST(ByteQueue, CancelUnblocksABlockedReaderAndABlockedWriter) {
  ByteQueue reader_side(100);
  auto reader = std::async(std::launch::async, [&] {
    uint8_t buf[8];
    return reader_side.Read(buf, sizeof(buf));  // nothing queued: blocks
  });
  EXPECT_EQ(reader.wait_for(50ms), std::future_status::timeout);
  reader_side.Cancel();
  ASSERT_EQ(reader.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(reader.get(), AVERROR_EXIT);

  ByteQueue writer_side(100);
  ASSERT_TRUE(writer_side.Push(Bytes(100)).ok());
  auto writer = std::async(std::launch::async, [&] { return writer_side.Push(Bytes(1)); });
  EXPECT_EQ(writer.wait_for(50ms), std::future_status::timeout);
  writer_side.Cancel();
  ASSERT_EQ(writer.wait_for(2s), std::future_status::ready);
  EXPECT_EQ(writer.get().code(), StatusCode::kCancelled);
  EXPECT_EQ(writer_side.queued_bytes(), 0u);  // cancel drops what was queued
  uint8_t buf[8];
  EXPECT_EQ(writer_side.Read(buf, sizeof(buf)), AVERROR_EXIT);
}

}  // namespace
