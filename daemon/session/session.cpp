// A Transcode stream's pipeline (see session.h): its lifecycle. Run() reads the input
// (session_container_input.cpp or session_raw_input.cpp), which hands frames to the
// output side (session_output.cpp), then ends the stream with the session's status.
#include "session.h"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

namespace conveyor {
namespace {

// How long a failed session waits for the frames the worker holds: they take
// milliseconds; a worker that hangs is the watchdog's to recover, and the session ends
// anyway after this.
constexpr std::chrono::seconds kWorkerReturnTimeout{30};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Session::Session(std::string id, std::string owner, Job job, SessionOptions options, std::shared_ptr<Lane> lane,
                 std::string worker_name, WorkerInfo worker)
    : id_(std::move(id)),
      owner_(std::move(owner)),
      job_(std::move(job)),
      options_(options),
      lane_(std::move(lane)),
      worker_name_(std::move(worker_name)),
      worker_(std::move(worker)),
      bytes_(options.input_bytes, [this] {
        std::lock_guard<std::mutex> lock(sink_mu_);
        if (sink_ != nullptr && !closed_) sink_->ResumeReading();
      }),
      meter_(options.metrics, lane_->worker_index(), worker_.is_gpu()) {
  Touch();
}

Session::~Session() = default;

void Session::Start(SessionSink* sink) {
  {
    std::lock_guard<std::mutex> lock(sink_mu_);
    sink_ = sink;
  }
  // Run() joins the output thread, and the pipeline thread holds the session alive until
  // the pipeline has ended.
  output_thread_ = std::thread([this] { OutputLoop(); });
  std::thread([self = shared_from_this()] { self->Run(); }).detach();
}

void Session::DetachSink() {
  std::lock_guard<std::mutex> lock(sink_mu_);
  sink_ = nullptr;
}

void Session::AbortStream() {
  std::lock_guard<std::mutex> lock(sink_mu_);
  if (sink_ != nullptr) sink_->Abort();
}

void Session::Touch() { last_activity_ns_.store(NowNs()); }

double Session::IdleSeconds() const { return (NowNs() - last_activity_ns_.load()) / 1e9; }

bool Session::HasUnsentOutput() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return unsent_bytes_ > 0 || (shared_out_ && shared_out_->AwaitingRelease());
}

void Session::EndOfInput() {
  bytes_.Close();
  std::lock_guard<std::mutex> lock(raw_mu_);
  input_ended_ = true;
  raw_cv_.notify_all();
}

void Session::Cancel(Status status) { Fail(std::move(status)); }

void Session::Fail(Status status) {
  spdlog::debug("session {}: stopping: {}", id_, status.ToString());
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (failure_.ok()) failure_ = std::move(status);
    cancelled_ = true;
  }
  // Frames still queued in the lane never reach the worker, so they never complete.
  const int dropped = lane_->Cancel();
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    submitted_ -= std::min<uint64_t>(static_cast<uint64_t>(dropped), submitted_ - completed_);
  }
  state_cv_.notify_all();
  bytes_.Cancel();
  {
    std::lock_guard<std::mutex> lock(raw_mu_);
    raw_cv_.notify_all();
  }
}

void Session::Run() {
  Status s = job_.container_input ? RunContainer() : RunRaw();
  if (s.ok()) s = WaitForAllFrames();
  if (s.ok() && !muxers_.empty()) {
    std::lock_guard<std::mutex> lock(mux_mu_);
    for (auto& m : muxers_) {
      s = m->Finish();
      if (!s.ok()) break;
    }
  }
  if (s.ok() && storyboard_) SendStoryboard();  // after the last sprite, before Summary
  if (s.ok()) {
    v1::TranscodeResponse r;
    v1::Summary* summary = r.mutable_summary();
    summary->set_frames_in(frames_in_.load());
    summary->set_frames_out(frames_out_.load());
    summary->set_bytes_in(bytes_in_.load());
    summary->set_bytes_out(bytes_out_.load());
    summary->set_wall_seconds(std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
    summary->set_decode_errors(decode_errors_.load());
    summary->set_frames_dropped(frames_dropped_.load());
    summary->set_truncated(truncated_.load());
    summary->set_read_requests(read_requests_.load());
    summary->set_spooled_bytes(spooled_bytes_.load());
    summary->set_frames_deinterlaced(frames_deinterlaced_.load());
    summary->set_decoder_failover(decoder_failover_);
    // Summed over frames; the stages of different frames overlap in time.
    const std::pair<const char*, double> stages[] = {
        {"demux", demux_seconds_},        {"decode", decode_seconds_},
        {"surfaces_wait", surfaces_wait_seconds_}, {"lane_wait", lane_wait_seconds_},
        {"queue", queue_seconds_},        {"encode", encode_seconds_},
        {"handover", handover_seconds_},  {"output_wait", output_wait_seconds_}};
    for (const auto& [name, seconds] : stages) {
      v1::StageSeconds* stage = summary->add_stages();
      stage->set_stage(name);
      stage->set_seconds(seconds);
    }
    Send(std::move(r));
  } else {
    Fail(s);
    // The worker may still hold frames of this session. The stream ends once they are
    // back, so that a session's end (the client's status, ListSessions, the session
    // count) means its slots are free again.
    if (!WaitForWorkerFrames(kWorkerReturnTimeout)) {
      spdlog::warn("session {}: the worker still holds frames of it {} s after it failed; ending it anyway", id_,
                   kWorkerReturnTimeout.count());
    }
    std::lock_guard<std::mutex> lock(state_mu_);
    s = failure_;  // the first failure explains the session's end
  }
  StopOutput();  // every frame is written, or the worker is past its return timeout
  if (s.ok() && (decode_errors_.load() > 0 || frames_dropped_.load() > 0 || truncated_.load())) {
    // One line for the session, however many packets were damaged (FFmpeg's own lines
    // are at debug level).
    spdlog::warn("session {}: done with a damaged input: {} decode errors concealed, {} frames dropped{}; first: {} "
                 "({} frames in, {} out)",
                 id_, decode_errors_.load(), frames_dropped_.load(), truncated_.load() ? ", truncated" : "",
                 damage_note_, frames_in_.load(), frames_out_.load());
  } else if (s.ok()) {
    spdlog::info("session {}: done, {} frames in, {} out", id_, frames_in_.load(), frames_out_.load());
  } else if (s.code() == StatusCode::kCancelled) {
    // The client went away or asked for it (CancelSession, a drain): not the service's failure.
    spdlog::info("session {}: ended: {} ({} frames in, {} out)", id_, s.ToString(), frames_in_.load(),
                 frames_out_.load());
  } else {
    spdlog::warn("session {}: failed: {} ({} frames in, {} out)", id_, s.ToString(), frames_in_.load(),
                 frames_out_.load());
  }
  Touch();  // the reaper's clock for a client that does not read the end restarts here
  {
    std::lock_guard<std::mutex> lock(sink_mu_);
    if (sink_ != nullptr && !closed_) sink_->Close(s);
    closed_ = true;
  }
  finished_.store(true);
}

Status Session::WaitForAllFrames() {
  std::unique_lock<std::mutex> lock(state_mu_);
  state_cv_.wait(lock, [&] { return cancelled_ || completed_ == submitted_; });
  return failure_;
}

bool Session::WaitForWorkerFrames(std::chrono::seconds timeout) {
  std::unique_lock<std::mutex> lock(state_mu_);
  return state_cv_.wait_for(lock, timeout, [&] { return completed_ == submitted_; });
}

}  // namespace conveyor
