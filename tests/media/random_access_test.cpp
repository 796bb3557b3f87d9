// Random access to client input: the ByteQueue's positioned pushes (generations, stale
// and misplaced ranges, the end of a run), the input spool (bounded, nameless, gone with
// its owner) and the ContainerDecoder seeking by request or from a spool, checked against
// what ffprobe reads from the same files.
#include <dirent.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

#include "byte_queue.h"
#include "demux_decoder.h"
#include "input_spool.h"
#include "media_test_util.h"

extern "C" {
#include <libavutil/error.h>
}

namespace {

using conveyor::Status;
using conveyor::StatusCode;
using conveyor::media::ByteQueue;
using conveyor::media::ContainerDecoder;
using conveyor::media::DecodedFrame;
using conveyor::media::DecoderOptions;
using conveyor::media::InputSpool;
using namespace std::chrono_literals;
using PushAt = ByteQueue::PushAt;

std::vector<uint8_t> Bytes(size_t n, uint8_t first = 0) {
  std::vector<uint8_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// Reads what the queue holds until it reports something other than bytes.
std::vector<uint8_t> Drain(ByteQueue& q, int* last) {
  std::vector<uint8_t> got;
  uint8_t buf[64];
  for (;;) {
    const int n = q.Read(buf, sizeof buf);
    if (n <= 0) {
      *last = n;
      return got;
    }
    got.insert(got.end(), buf, buf + n);
  }
}

// ---------------------------------------------------------------------------------------
// ByteQueue: positioned pushes.

TEST(ByteQueuePositioned, ARunFromOffsetZeroEndsWithEof) {
  ByteQueue q(1024);
  std::vector<uint8_t> a = Bytes(10), b = Bytes(5, 10);
  ASSERT_EQ(*q.TryPushAt(0, 0, a, false), PushAt::kTaken);
  ASSERT_EQ(*q.TryPushAt(0, 10, b, true), PushAt::kTaken);
  int last = 0;
  EXPECT_EQ(Drain(q, &last), Bytes(15));
  EXPECT_EQ(last, AVERROR_EOF);  // the run ended; the queue itself is still open
  EXPECT_EQ(q.position(), 15u);
  EXPECT_TRUE(q.generation_ended());
}

TEST(ByteQueuePositioned, RepositionDropsQueuedBytesAndStaleRanges) {
  ByteQueue q(1024);
  std::vector<uint8_t> a = Bytes(100);
  ASSERT_EQ(*q.TryPushAt(0, 0, a, false), PushAt::kTaken);
  uint8_t buf[10];
  ASSERT_EQ(q.Read(buf, sizeof buf), 10);
  const std::optional<uint64_t> g = q.Reposition(5000);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(*g, 1u);
  EXPECT_EQ(q.queued_bytes(), 0u);  // the 90 unread bytes of run 0 are gone
  EXPECT_EQ(q.position(), 5000u);
  // Run 0 goes on arriving (in flight when the request went out): dropped, not queued.
  std::vector<uint8_t> late = Bytes(50, 100);
  EXPECT_EQ(*q.TryPushAt(0, 100, late, false), PushAt::kStale);
  EXPECT_EQ(q.queued_bytes(), 0u);
  std::vector<uint8_t> answer = Bytes(20, 7);
  ASSERT_EQ(*q.TryPushAt(1, 5000, answer, true), PushAt::kTaken);
  int last = 0;
  EXPECT_EQ(Drain(q, &last), Bytes(20, 7));
  EXPECT_EQ(last, AVERROR_EOF);
  EXPECT_EQ(q.position(), 5020u);
}

TEST(ByteQueuePositioned, MisplacedRangesAreInvalidArgumentsNamingTheOffsets) {
  ByteQueue q(1024);
  std::vector<uint8_t> a = Bytes(10);
  auto wrong_offset = q.TryPushAt(0, 3, a, false);
  ASSERT_FALSE(wrong_offset.ok());
  EXPECT_EQ(wrong_offset.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_offset.status().message().find("offset 3 is not where the input goes on (0)"), std::string::npos)
      << wrong_offset.status().ToString();
  auto future_run = q.TryPushAt(4, 0, a, false);
  ASSERT_FALSE(future_run.ok());
  EXPECT_NE(future_run.status().message().find("seek_id 4 was never requested (the last is 0)"), std::string::npos)
      << future_run.status().ToString();
  ASSERT_EQ(*q.TryPushAt(0, 0, a, true), PushAt::kTaken);
  std::vector<uint8_t> more = Bytes(1);
  auto after_end = q.TryPushAt(0, 10, more, false);
  ASSERT_FALSE(after_end.ok());
  EXPECT_NE(after_end.status().message().find("after end_of_input"), std::string::npos);
  EXPECT_EQ(q.queued_bytes(), 10u);  // nothing of the refused ranges was taken
}

TEST(ByteQueuePositioned, AFullQueueKeepsTheRangeAndCallsBackAfterAReposition) {
  std::atomic<int> called{0};
  ByteQueue q(100, [&] { called++; });
  std::vector<uint8_t> a = Bytes(80), b = Bytes(40, 80);
  ASSERT_EQ(*q.TryPushAt(0, 0, a, false), PushAt::kTaken);
  EXPECT_EQ(*q.TryPushAt(0, 80, b, false), PushAt::kFull);
  EXPECT_EQ(b.size(), 40u);  // untouched, for the retry
  // A request while the producer waits: the wait ends, and the retry finds it stale.
  ASSERT_TRUE(q.Reposition(0).has_value());
  EXPECT_EQ(called.load(), 1);
  EXPECT_EQ(*q.TryPushAt(0, 80, b, false), PushAt::kStale);
}

TEST(ByteQueuePositioned, NoRepositionAfterCloseOrCancel) {
  ByteQueue closed(100), cancelled(100);
  closed.Close();
  cancelled.Cancel();
  EXPECT_FALSE(closed.Reposition(10).has_value());
  EXPECT_FALSE(cancelled.Reposition(10).has_value());
}

// ---------------------------------------------------------------------------------------
// InputSpool.

size_t EntriesIn(const std::string& dir) {
  size_t n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) n += std::string(e->d_name) != "." && std::string(e->d_name) != "..";
    closedir(d);
  }
  return n;
}

TEST(InputSpool, HoldsWhatIsAppendedWithoutANameAndWithinItsBound) {
  const std::string dir = media_test::TempDir() + "/spool";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  const uint64_t before = InputSpool::TotalBytes();
  {
    auto spool = InputSpool::Create(dir, 1000);
    ASSERT_TRUE(spool.ok()) << spool.status().ToString();
    const std::vector<uint8_t> a = Bytes(600), b = Bytes(400, 33);
    ASSERT_TRUE((*spool)->Append(a.data(), a.size()).ok());
    ASSERT_TRUE((*spool)->Append(b.data(), b.size()).ok());
    EXPECT_EQ(EntriesIn(dir), 0u);  // no name at any time: nothing to clean up after a crash
    EXPECT_EQ(InputSpool::TotalBytes(), before + 1000);
    const Status past = (*spool)->Append(b.data(), 1);
    EXPECT_EQ(past.code(), StatusCode::kResourceExhausted);
    EXPECT_NE(past.message().find("limits.input_spool_bytes (1000)"), std::string::npos) << past.ToString();
    EXPECT_EQ((*spool)->bytes(), 1000u);
    uint8_t buf[300];
    auto n = (*spool)->ReadAt(550, buf, sizeof buf);
    ASSERT_TRUE(n.ok());
    ASSERT_EQ(*n, 300u);
    std::vector<uint8_t> want(a.begin() + 550, a.end());
    want.insert(want.end(), b.begin(), b.begin() + 250);
    EXPECT_EQ(std::vector<uint8_t>(buf, buf + 300), want);
    auto tail = (*spool)->ReadAt(900, buf, sizeof buf);
    ASSERT_TRUE(tail.ok());
    EXPECT_EQ(*tail, 100u);  // only what is there
    EXPECT_FALSE((*spool)->ReadAt(1000, buf, sizeof buf).ok());
  }
  EXPECT_EQ(InputSpool::TotalBytes(), before);
}

TEST(InputSpool, AMissingDirectoryIsAClearError) {
  auto spool = InputSpool::Create(media_test::TempDir() + "/no/such/dir", 1000);
  ASSERT_FALSE(spool.ok());
  EXPECT_EQ(spool.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(spool.status().message().find("no/such/dir"), std::string::npos) << spool.status().ToString();
}

// ---------------------------------------------------------------------------------------
// ContainerDecoder with random access, and with a spool.

// A client that holds the whole input: it sends it from offset 0 and, on each request,
// from the requested offset, as ContainerInput.seekable asks. `end_before_answering`
// closes the queue (a half-close) once the first run is sent instead of answering.
class SeekingClient {
 public:
  SeekingClient(const std::vector<uint8_t>& data, ByteQueue* queue, size_t chunk, bool end_before_answering = false)
      : data_(data), queue_(queue), chunk_(chunk), end_before_answering_(end_before_answering) {
    thread_ = std::thread([this] { Run(); });
  }
  ~SeekingClient() { Stop(); }

  void Request(uint64_t generation, uint64_t offset) {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = std::make_pair(generation, offset);
    requests_.push_back(offset);
    cv_.notify_all();
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }
  std::vector<uint64_t> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  uint64_t bytes_sent() const { return sent_.load(); }
  Status error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  void Run() {
    uint64_t generation = 0, offset = 0;
    bool at_end = false;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (at_end) {
          if (end_before_answering_) {
            queue_->Close();
            return;
          }
          cv_.wait(lock, [&] { return stop_ || pending_.has_value(); });
        }
        if (stop_) return;
        if (pending_) {
          std::tie(generation, offset) = *pending_;
          pending_.reset();
          at_end = false;
        }
      }
      // Past the end of what it holds, a client answers with an empty run that ends.
      const size_t n = offset >= data_.size() ? 0 : static_cast<size_t>(std::min<uint64_t>(chunk_, data_.size() - offset));
      std::vector<uint8_t> chunk;
      if (n > 0) {
        chunk.assign(data_.begin() + static_cast<std::ptrdiff_t>(offset),
                     data_.begin() + static_cast<std::ptrdiff_t>(offset + n));
      }
      const bool end = offset + n >= data_.size();
      for (;;) {
        auto pushed = queue_->TryPushAt(generation, offset, chunk, end);
        if (!pushed.ok()) {
          std::lock_guard<std::mutex> lock(mu_);
          error_ = pushed.status();
          return;
        }
        if (*pushed == PushAt::kFull) {
          std::unique_lock<std::mutex> lock(mu_);
          if (stop_) return;
          cv_.wait_for(lock, 1ms);
          continue;
        }
        sent_ += n;
        if (*pushed == PushAt::kTaken) {
          offset += n;
          at_end = end;
        }
        break;  // taken, or stale: a request is pending
      }
    }
  }

  const std::vector<uint8_t>& data_;
  ByteQueue* const queue_;
  const size_t chunk_;
  const bool end_before_answering_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<std::pair<uint64_t, uint64_t>> pending_;
  std::vector<uint64_t> requests_;
  bool stop_ = false;
  std::atomic<uint64_t> sent_{0};
  Status error_;
  std::thread thread_;
};

struct SeekRun {
  Status status;
  std::vector<double> seconds;  // of each decoded frame
  uint64_t decoder_requests = 0;
  std::vector<uint64_t> requests;  // the offsets the client was asked for
  uint64_t bytes_sent = 0;
  size_t queue_peak = 0;
  Status client_error;
};

SeekRun DecodeSeekable(const std::vector<uint8_t>& data, uint64_t declared_size, bool end_before_answering = false) {
  SeekRun run;
  ByteQueue queue(256 * 1024);
  SeekingClient client(data, &queue, 16 * 1024, end_before_answering);
  DecoderOptions options;
  options.random_access.enabled = true;
  options.random_access.size = declared_size;
  options.random_access.request = [&client](uint64_t generation, uint64_t offset) {
    client.Request(generation, offset);
  };
  std::unique_ptr<ContainerDecoder> decoder;
  run.status = [&]() -> Status {
    ASSIGN_OR_RETURN(decoder, ContainerDecoder::Open(&queue, options));
    DecodedFrame frame;
    for (;;) {
      ASSIGN_OR_RETURN(const bool got, decoder->Next(&frame));
      if (!got) return conveyor::OkStatus();
      run.seconds.push_back(frame.seconds());
    }
  }();
  if (decoder) run.decoder_requests = decoder->seek_requests();
  queue.Cancel();
  client.Stop();
  run.requests = client.requests();
  run.bytes_sent = client.bytes_sent();
  run.queue_peak = queue.peak_bytes();
  run.client_error = client.error();
  return run;
}

// The presentation times ffprobe reads from the file (its packets' pts, sorted).
std::vector<double> FfprobeTimes(const std::string& path) {
  auto times = media_test::ProbeVideoPacketTimes(path);
  EXPECT_TRUE(times.ok()) << times.status().ToString();
  std::vector<double> t = times.ok() ? *times : std::vector<double>{};
  std::sort(t.begin(), t.end());
  return t;
}

void ExpectSameTimes(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3) << "frame " << i;
}

// An MP4 with moov after mdat, as the ffmpeg CLI writes it by default. Noise at qp 0
// makes mdat a few MB, so skipping it takes a request rather than reading through.
conveyor::StatusOr<std::string> LateMoovMp4() {
  return media_test::MakeMedia("late_moov.mp4", media_test::TestSource() + ",noise=alls=40:allf=t",
                               {"-frames:v", "30", "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0"});
}

#define REQUIRE_X264()                                                                            \
  do {                                                                                            \
    if (!media_test::HasEncoder("libx264")) GTEST_SKIP() << "this ffmpeg has no libx264 encoder"; \
  } while (0)

TEST(RandomAccess, LateMoovIsDecodedBySeekingAsFfprobeReadsIt) {
  REQUIRE_X264();
  auto path = LateMoovMp4();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto data = media_test::ReadFile(*path);
  ASSERT_TRUE(data.ok());
  ASSERT_GT(data->size(), 2u << 20);
  const SeekRun run = DecodeSeekable(*data, data->size());
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  EXPECT_TRUE(run.client_error.ok()) << run.client_error.ToString();
  ExpectSameTimes(run.seconds, FfprobeTimes(*path));
  // One request past mdat for moov, one back to mdat's samples.
  EXPECT_EQ(run.decoder_requests, 2u);
  ASSERT_EQ(run.requests.size(), 2u);
  EXPECT_GT(run.requests[0], run.requests[1]);
  EXPECT_LE(run.queue_peak, 256u * 1024 + 16 * 1024);
  // Bytes moved: the file once, plus what was in flight when each request came.
  EXPECT_LT(run.bytes_sent, data->size() + 2 * (256 + 16) * 1024 + 64 * 1024) << "file " << data->size();
}

TEST(RandomAccess, StreamingLayoutsNeverRequest) {
  REQUIRE_X264();
  auto faststart = media_test::MakeMedia("fast.mp4", media_test::TestSource(),
                                         {"-frames:v", "30", "-c:v", "libx264", "-preset", "ultrafast",
                                          "-movflags", "faststart"});
  auto mkv = media_test::MakeMedia("cues.mkv", media_test::TestSource(),
                                   {"-frames:v", "30", "-c:v", "libx264", "-preset", "ultrafast"});
  auto ts = media_test::MakeMedia("plain.ts", media_test::TestSource(),
                                  {"-frames:v", "30", "-c:v", "libx264", "-preset", "ultrafast"});
  for (auto* made : {&faststart, &mkv, &ts}) {
    ASSERT_TRUE(made->ok()) << made->status().ToString();
    const std::string path = **made;
    auto data = media_test::ReadFile(path);
    ASSERT_TRUE(data.ok());
    const SeekRun run = DecodeSeekable(*data, data->size());
    ASSERT_TRUE(run.status.ok()) << path << ": " << run.status.ToString();
    ExpectSameTimes(run.seconds, FfprobeTimes(path));
    EXPECT_EQ(run.decoder_requests, 0u) << path;
    EXPECT_EQ(run.bytes_sent, data->size()) << path;
  }
}

// A client that says its input is 2 MiB when mdat alone is longer: mov sees its boxes run
// past the end and finds no moov. Bad input, not a hang or a crash.
TEST(RandomAccess, ADeclaredSizeShorterThanTheBoxesIsInvalidArgument) {
  REQUIRE_X264();
  auto path = LateMoovMp4();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto data = media_test::ReadFile(*path);
  ASSERT_TRUE(data.ok());
  const SeekRun run = DecodeSeekable(*data, 2u << 20);
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument) << run.status.ToString();
}

// The index points past the end: mdat cut short by 1 MiB in the middle (its box size
// mended, moov moved up with it), so the last samples' offsets lie beyond the input's
// declared size. The demuxer's seek there is INVALID_ARGUMENT naming the size, not a
// request the client could never answer.
TEST(RandomAccess, ASeekPastTheDeclaredSizeIsInvalidArgumentNamingIt) {
  REQUIRE_X264();
  auto path = LateMoovMp4();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto data = media_test::ReadFile(*path);
  ASSERT_TRUE(data.ok());
  // Top-level boxes: find mdat (it precedes moov in this layout).
  size_t at = 0, mdat = 0;
  while (at + 8 <= data->size()) {
    const uint32_t size = (*data)[at] << 24 | (*data)[at + 1] << 16 | (*data)[at + 2] << 8 | (*data)[at + 3];
    if (std::string(data->begin() + at + 4, data->begin() + at + 8) == "mdat") mdat = at;
    if (size < 8) break;
    at += size;
  }
  ASSERT_GT(mdat, 0u);
  const uint32_t cut = 1u << 20;
  const uint32_t mdat_size = (*data)[mdat] << 24 | (*data)[mdat + 1] << 16 | (*data)[mdat + 2] << 8 | (*data)[mdat + 3];
  ASSERT_GT(mdat_size, 2 * cut);
  std::vector<uint8_t> cut_short(data->begin(), data->begin() + mdat + mdat_size / 2);
  cut_short.insert(cut_short.end(), data->begin() + mdat + mdat_size / 2 + cut, data->end());
  const uint32_t mended = mdat_size - cut;
  for (int k = 0; k < 4; ++k) cut_short[mdat + k] = static_cast<uint8_t>(mended >> (24 - 8 * k));
  const SeekRun run = DecodeSeekable(cut_short, cut_short.size());
  EXPECT_EQ(run.status.code(), StatusCode::kInvalidArgument) << run.status.ToString();
  EXPECT_NE(run.status.message().find("past the end of the input (ContainerInput.size " +
                                      std::to_string(cut_short.size()) + ")"),
            std::string::npos)
      << run.status.ToString();
}

TEST(RandomAccess, AClientThatEndsItsInputBeforeAnsweringIsNamed) {
  REQUIRE_X264();
  auto path = LateMoovMp4();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  auto data = media_test::ReadFile(*path);
  ASSERT_TRUE(data.ok());
  const SeekRun run = DecodeSeekable(*data, data->size(), /*end_before_answering=*/true);
  EXPECT_EQ(run.status.code(), StatusCode::kFailedPrecondition) << run.status.ToString();
  EXPECT_NE(run.status.message().find("the client has ended its input"), std::string::npos) << run.status.ToString();
}

TEST(Spool, LateMoovFromAStreamIsSpooledAndDecodedAsFfprobeReadsIt) {
  REQUIRE_X264();
  auto path = LateMoovMp4();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  const std::string dir = media_test::TempDir() + "/spool-decode";
  ASSERT_EQ(system(("mkdir -p " + dir).c_str()), 0);
  media_test::DecodeSetup setup;
  setup.options.spool_directory = dir;
  setup.options.spool_bytes = 64u << 20;
  uint64_t spooled = 0;
  size_t entries = 1;
  setup.on_frame = [&](ContainerDecoder& d, DecodedFrame&) {
    spooled = d.spooled_bytes();
    entries = EntriesIn(dir);
    return conveyor::OkStatus();
  };
  const media_test::DecodeRun run = media_test::DecodeFile(*path, setup);
  ASSERT_TRUE(run.status.ok()) << run.status.ToString();
  std::vector<double> seconds;
  for (const auto& f : run.frames) seconds.push_back(f.seconds);
  ExpectSameTimes(seconds, FfprobeTimes(*path));
  auto data = media_test::ReadFile(*path);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(spooled, data->size());  // all of it: moov is last
  EXPECT_EQ(entries, 0u);            // while in use, the spool has no name
  EXPECT_EQ(InputSpool::TotalBytes(), 0u);  // and its bytes are gone with the decoder
}

TEST(Spool, PastItsBoundIsResourceExhausted) {
  REQUIRE_X264();
  auto path = LateMoovMp4();
  ASSERT_TRUE(path.ok()) << path.status().ToString();
  media_test::DecodeSetup setup;
  setup.options.spool_directory = media_test::TempDir();
  setup.options.spool_bytes = 1u << 20;
  const media_test::DecodeRun run = media_test::DecodeFile(*path, setup);
  EXPECT_EQ(run.status.code(), StatusCode::kResourceExhausted) << run.status.ToString();
  EXPECT_NE(run.status.message().find("limits.input_spool_bytes (1048576)"), std::string::npos)
      << run.status.ToString();
  EXPECT_EQ(InputSpool::TotalBytes(), 0u);
}

}  // namespace
