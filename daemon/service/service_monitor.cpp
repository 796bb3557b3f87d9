// The status and watchdog thread (see service_monitor.h).
#include "service_monitor.h"

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

namespace conveyor {

ServiceMonitor::ServiceMonitor(SystemdNotifier* notifier, SessionManager* sessions, Liveness alive, Options options)
    : notifier_(notifier), sessions_(sessions), alive_(std::move(alive)), options_(options) {
  last_frames_ = FramesDone();
  last_sample_ = std::chrono::steady_clock::now();
}

ServiceMonitor::~ServiceMonitor() { Stop(); }

void ServiceMonitor::Start() {
  if (!notifier_->enabled() || thread_.joinable()) return;
  if (notifier_->watchdog_interval().count() > 0) {
    spdlog::info("systemd watchdog: pinging every {} ms", notifier_->watchdog_interval().count() / 2000);
  }
  thread_ = std::thread([this] { Loop(); });
}

void ServiceMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t ServiceMonitor::FramesDone() {
  const Scheduler& scheduler = sessions_->scheduler();
  uint64_t frames = 0;
  for (int i = 0; i < scheduler.num_workers(); ++i) frames += scheduler.worker(i).worker->Stats().frames_done;
  return frames;
}

void ServiceMonitor::StartDrain(std::chrono::steady_clock::time_point deadline) {
  std::lock_guard<std::mutex> lock(sample_mu_);
  drain_started_ = true;
  drain_deadline_ = deadline;
}

void ServiceMonitor::EndDrain(const std::string& what) {
  std::lock_guard<std::mutex> lock(sample_mu_);
  drain_end_ = what;
}

void ServiceMonitor::SetReloadRefusal(const std::string& why) {
  std::lock_guard<std::mutex> lock(sample_mu_);
  reload_refusal_ = why;
}

std::string ServiceMonitor::SampleStatus() {
  const int sessions = sessions_->active();
  const bool draining = sessions_->draining();
  const uint64_t frames = FramesDone();
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(sample_mu_);
  if (!drain_end_.empty()) return drain_end_;
  double fps = 0;
  const double seconds = std::chrono::duration<double>(now - last_sample_).count();
  if (seconds > 0 && frames >= last_frames_) fps = static_cast<double>(frames - last_frames_) / seconds;
  last_frames_ = frames;
  last_sample_ = now;
  char text[192];
  std::snprintf(text, sizeof(text), "%s%d session%s, %.1f frames/s", draining ? "draining, " : "", sessions,
                sessions == 1 ? "" : "s", fps);
  std::string status = text;
  if (drain_started_ && sessions > 0) {
    const double left = std::max(0.0, std::chrono::duration<double>(drain_deadline_ - now).count());
    std::snprintf(text, sizeof(text), "; waiting for %s to end, %.0f s left", sessions == 1 ? "it" : "them", left);
    status += text;
  }
  if (!reload_refusal_.empty()) status += "; reload refused, the running config stays: " + reload_refusal_;
  return status;
}

void ServiceMonitor::Loop() {
  using Clock = std::chrono::steady_clock;
  const auto ping_period = std::chrono::duration_cast<Clock::duration>(notifier_->watchdog_interval() / 2);
  const bool watchdog = ping_period.count() > 0;
  Clock::time_point next_ping = Clock::now();
  Clock::time_point next_status = Clock::now() + options_.status_period;
  bool was_alive = true;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const Clock::time_point wake = watchdog ? std::min(next_ping, next_status) : next_status;
    if (wake_.wait_until(lock, wake, [&] { return stopping_; })) break;
    lock.unlock();
    // Each next deadline counts from now, not from the last one, so a late wake-up never
    // brings two messages close together.
    if (watchdog && Clock::now() >= next_ping) {
      const bool alive = alive_ ? alive_() : true;
      if (alive) {
        if (Status s = notifier_->Watchdog(); !s.ok()) spdlog::warn("systemd watchdog: {}", s.ToString());
      }
      if (alive != was_alive) {
        if (alive) {
          spdlog::info("systemd watchdog: healthy again; pinging");
        } else {
          spdlog::error("systemd watchdog: liveness check failed; not pinging (systemd restarts us if it stays so)");
        }
        was_alive = alive;
      }
      next_ping = Clock::now() + ping_period;
    }
    if (Clock::now() >= next_status) {
      if (Status s = notifier_->SetStatus(SampleStatus()); !s.ok()) spdlog::warn("systemd status: {}", s.ToString());
      next_status = Clock::now() + options_.status_period;
    }
    lock.lock();
  }
}

}  // namespace conveyor
