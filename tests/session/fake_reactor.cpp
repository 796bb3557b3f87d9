// The rpc reactor's call pattern into a Session, without gRPC (see fake_reactor.h).
#include "fake_reactor.h"

namespace conveyor::session_test {

FakeReactor::FakeReactor(std::shared_ptr<Session> session, SessionManager* manager)
    : session_(std::move(session)), manager_(manager), input_(session_) {
  writer_ = std::thread([this] { WriteLoop(); });
}

FakeReactor::~FakeReactor() {
  bool ended;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended = finished_;
  }
  // Only a failed test gets here with the stream open; end the session so its threads
  // stop touching what this test owns.
  if (!ended) session_->Cancel(Status(StatusCode::kCancelled, "test teardown"));
  session_->DetachSink();
  if (manager_ != nullptr) manager_->Remove(session_->id());
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  writer_.join();
}

void FakeReactor::Start() {
  session_->Start(this);
  ReadNext();
}

bool FakeReactor::WaitForRead() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return read_started_ || finished_ || close_status_.has_value(); });
  if (!read_started_ || finished_ || close_status_) return false;
  read_started_ = false;
  return true;
}

bool FakeReactor::Read(v1::TranscodeRequest request) {
  if (!WaitForRead()) return false;
  if (input_.Offer(request)) ReadNext();
  return true;
}

bool FakeReactor::HalfClose() {
  if (!WaitForRead()) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reads_ended_ = true;
  }
  session_->EndOfInput();
  return true;
}

void FakeReactor::ResumeReading() {
  std::lock_guard<std::mutex> lock(mu_);
  resume_scheduled_ = true;
  cv_.notify_all();
}

void FakeReactor::ReadNext() {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || close_status_ || reads_ended_) return;
  read_started_ = true;
  cv_.notify_all();
}

void FakeReactor::Send(v1::TranscodeResponse response) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || close_status_) return;
  outbox_.push_back(std::move(response));
  cv_.notify_all();
}

void FakeReactor::Close(Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_ || close_status_) return;
  close_status_ = std::move(status);
  cv_.notify_all();
}

void FakeReactor::Abort() {
  // Only the manager's reaper aborts (a client not reading after the end), and these
  // tests keep its idle timeout far away; an abort here is a bug.
  std::lock_guard<std::mutex> lock(mu_);
  if (!finished_ && !close_status_) close_status_ = Status(StatusCode::kInternal, "unexpected Abort");
  cv_.notify_all();
}

void FakeReactor::WriteLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] {
      return stopping_ || resume_scheduled_ || (!hold_writes_ && !outbox_.empty()) ||
             (outbox_.empty() && close_status_ && !finished_);
    });
    if (stopping_) return;
    if (resume_scheduled_) {
      resume_scheduled_ = false;
      lock.unlock();
      if (input_.Resume()) ReadNext();
      lock.lock();
      continue;
    }
    if (!outbox_.empty()) {
      written_.push_back(std::move(outbox_.front()));
      outbox_.pop_front();
      const size_t payload = PayloadBytes(written_.back());
      lock.unlock();
      session_->OnSent(payload);  // OnWriteDone, outside the lock as in the reactor
      lock.lock();
      continue;
    }
    finished_ = true;  // Finish(close status) after the last write
    cv_.notify_all();
  }
}

void FakeReactor::HoldWrites(bool hold) {
  std::lock_guard<std::mutex> lock(mu_);
  hold_writes_ = hold;
  cv_.notify_all();
}

std::optional<Status> FakeReactor::WaitClosed(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return finished_; })) return std::nullopt;
  return *close_status_;
}

std::vector<v1::TranscodeResponse> FakeReactor::Written() const {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

size_t FakeReactor::Unwritten() const {
  std::lock_guard<std::mutex> lock(mu_);
  return outbox_.size();
}

bool FakeReactor::ReadingPaused() const { return input_.Paused(); }

}  // namespace conveyor::session_test
