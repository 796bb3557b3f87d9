// Fuzz target: a raw-input Transcode stream as the daemon's front end hands it on: the
// first request's JobSpec to SessionManager::Create (ParseJobSpec), then each request's
// frame chunk to Session::TryPushFrameChunk, which assembles and size-checks frames for
// the CPU worker (scaling and encoding every rendition), or its shared frame to
// Session::TryPushSharedFrame. A job with raw.shared_memory_slots gets a sealed memfd,
// filled from the input's bytes, attached as the attach socket would (unless the
// input's first byte is odd: then frames come before any attach). A refused message
// cancels the session, as the reactor does. A stream the session accepts must end OK
// with one JPEG per frame and rendition, each decoding (libjpeg-turbo) to the
// rendition's size.
//
// Input layout: requests, each a 2-byte little-endian length and that many bytes of a
// serialized TranscodeRequest. Frames are at most kMaxSide square.
#include <fcntl.h>
#include <google/protobuf/stubs/logging.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <turbojpeg.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "conveyor/v1/transcoder.pb.h"
#include "job.h"
#include "scheduler.h"
#include "session.h"
#include "session_manager.h"

namespace {

using conveyor::v1::TranscodeRequest;
using conveyor::v1::TranscodeResponse;

// The session's size limit: it keeps one frame's scale and encode under ASan to
// milliseconds; the code paths do not change with size beyond a few MCUs.
constexpr int kMaxSide = 256;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// Stands in for the reactor: collects responses and wakes the fuzzer on resume and close.
class CollectingSink : public conveyor::SessionSink {
 public:
  void Send(TranscodeResponse response) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (response.has_packet()) {
      const auto& p = response.packet();
      std::vector<uint8_t>& jpeg = assembling_[p.rendition()];
      jpeg.insert(jpeg.end(), p.data().begin(), p.data().end());
      if (p.end_of_frame()) {
        jpegs_[p.rendition()].push_back(std::move(jpeg));
        assembling_.erase(p.rendition());
      }
    }
  }
  void Close(conveyor::Status status) override {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = std::move(status);
    closed_ = true;
    cv_.notify_all();
  }
  void ResumeReading() override {
    std::lock_guard<std::mutex> lock(mu_);
    resumed_ = true;
    cv_.notify_all();
  }
  void Abort() override {}

  // False when neither happened within the wait: a session that never resumes reading or
  // never ends is a hang (the fuzzer's -timeout would also catch it, with less to say).
  bool WaitResumedOrClosed() {
    std::unique_lock<std::mutex> lock(mu_);
    const bool woke = cv_.wait_for(lock, std::chrono::seconds(10), [&] { return resumed_ || closed_; });
    resumed_ = false;
    return woke;
  }
  bool WaitClosed() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return closed_; });
  }
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  // After WaitClosed(): nothing sends any more.
  const conveyor::Status& status() const { return status_; }
  const std::map<uint32_t, std::vector<std::vector<uint8_t>>>& jpegs() const { return jpegs_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint32_t, std::vector<uint8_t>> assembling_;
  std::map<uint32_t, std::vector<std::vector<uint8_t>>> jpegs_;
  conveyor::Status status_;
  bool closed_ = false, resumed_ = false;
};

conveyor::SessionManager& Manager() {
  // One CPU worker and one manager for the whole run, as in the daemon; a session per input.
  static conveyor::Scheduler* scheduler = [] {
    conveyor::WorkerOptions wo;
    wo.slots = 2;
    wo.cpu_threads = 1;
    wo.max_width = kMaxSide;
    wo.max_height = kMaxSide;
    std::vector<std::unique_ptr<conveyor::Worker>> workers;
    workers.push_back(conveyor::MakeCpuWorker(wo));
    return new conveyor::Scheduler(std::move(workers));
  }();
  static conveyor::SessionManager* manager = [] {
    conveyor::SessionOptions so;
    so.limits.max_width = kMaxSide;
    so.limits.max_height = kMaxSide;
    so.queue_frames = 2;
    so.message_bytes = 4096;  // several packets per JPEG, so reassembly is exercised
    auto* m = new conveyor::SessionManager(scheduler, so, conveyor::SessionLimits{});
    m->SetSharedMemorySocket("/fuzz/attach.sock");  // never connected to: the fuzzer attaches directly
    return m;
  }();
  return *manager;
}

std::vector<TranscodeRequest> SplitRequests(const uint8_t* data, size_t size) {
  std::vector<TranscodeRequest> out;
  while (size >= 2) {
    const size_t n = std::min<size_t>(data[0] | (data[1] << 8), size - 2);
    TranscodeRequest r;
    if (!r.ParseFromArray(data + 2, static_cast<int>(n))) break;
    out.push_back(std::move(r));
    data += 2 + n;
    size -= 2 + n;
  }
  return out;
}

// A sealed memfd of `bytes`, filled by repeating `fill` (the fuzz input); -1 on failure.
int FilledMemfd(size_t bytes, const uint8_t* fill, size_t fill_size) {
  const int fd = memfd_create("fuzz-frames", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 || fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0) {
    close(fd);
    return -1;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return -1;
  }
  auto* out = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < bytes; ++i) out[i] = fill[i % fill_size];
  munmap(p, bytes);
  return fd;
}

void CheckDecodes(const std::vector<uint8_t>& jpeg, int width, int height) {
  static tjhandle tj = tjInitDecompress();
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  Check(tjDecompressHeader3(tj, jpeg.data(), jpeg.size(), &w, &h, &subsamp, &colorspace) == 0);
  Check(w == width && h == height);
  std::vector<uint8_t> rgb(static_cast<size_t>(w) * h * 3);
  Check(tjDecompress2(tj, jpeg.data(), jpeg.size(), rgb.data(), w, 0, h, TJPF_RGB, 0) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The session logs its start and end, protobuf every non-UTF-8 string: noise at
  // hundreds of inputs a second.
  spdlog::set_level(spdlog::level::off);
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel, const char*, int, const std::string&) {});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<TranscodeRequest> requests = SplitRequests(data, size);
  if (requests.empty() || !requests[0].has_spec()) return 0;
  // Container input is fuzz_container_input's; here only raw frames.
  if (!requests[0].spec().has_raw()) return 0;
  auto created = Manager().Create(requests[0].spec(), "", /*unix_peer=*/true);
  if (!created.ok()) return 0;
  std::shared_ptr<conveyor::Session> session = *created;
  CollectingSink sink;
  session->Start(&sink);
  const uint32_t slots = requests[0].spec().raw().shared_memory_slots();
  if (slots > 0 && (data[0] & 1) == 0) {
    conveyor::JobLimits limits;
    limits.max_width = limits.max_height = kMaxSide;
    const size_t frame = conveyor::ParseJobSpec(requests[0].spec(), limits).value().RawFrameBytes();
    const int fd = FilledMemfd(slots * frame, data, size);
    Check(fd >= 0);
    Check(session->AttachSharedMemory(fd).ok());
    close(fd);  // the session keeps its mapping
  }

  // Whole frames the session took; a frame is whole at its end_of_frame chunk.
  uint64_t frames = 0;
  bool refused = false;
  for (size_t i = 1; i < requests.size() && !refused && !sink.closed(); ++i) {
    const bool chunk = requests[i].has_frame_chunk();
    if (!chunk && !requests[i].has_shared_frame()) {
      session->Cancel(conveyor::InvalidArgument("not a frame"));  // the reactor refuses these too
      refused = true;
      break;
    }
    for (;;) {
      auto taken = chunk ? session->TryPushFrameChunk(requests[i].frame_chunk())
                         : session->TryPushSharedFrame(requests[i].shared_frame());
      if (!taken.ok()) {
        session->Cancel(taken.status());
        refused = true;
        break;
      }
      if (*taken) {
        frames += chunk ? requests[i].frame_chunk().end_of_frame() : 1;
        break;
      }
      Check(sink.WaitResumedOrClosed());
      if (sink.closed()) break;
    }
  }
  session->EndOfInput();
  Check(sink.WaitClosed());
  // The pipeline thread marks the session finished just after closing; past that it
  // touches nothing of this input's, so the next input starts clean.
  while (!session->finished()) std::this_thread::yield();
  session->DetachSink();
  Manager().Remove(session->id());

  if (refused || !sink.status().ok()) return 0;
  conveyor::JobLimits limits;
  limits.max_width = limits.max_height = kMaxSide;
  const conveyor::Job job = conveyor::ParseJobSpec(requests[0].spec(), limits).value();
  const auto renditions = conveyor::ResolveRenditions(job, job.raw_width, job.raw_height, limits).value();
  if (frames > 0) Check(sink.jpegs().size() == renditions.size());
  for (const auto& [index, jpegs] : sink.jpegs()) {
    Check(index < renditions.size() && jpegs.size() == frames);
    const conveyor::Rendition& r = renditions[index];
    for (const auto& jpeg : jpegs) {
      CheckDecodes(jpeg, r.width == 0 ? job.raw_width : r.width, r.height == 0 ? job.raw_height : r.height);
    }
  }
  return 0;
}
