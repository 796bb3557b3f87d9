#include "decode_balancer.h"

#include <cstdio>

#include "decode_load.h"

namespace conveyor {

struct DecodeBalancer::Ticket::State {
  Sampler sampler;
  Policy policy;
  std::mutex mu;
  struct Worker {
    std::vector<Ticket*> tickets;  // registration order: the newest last
    double busy = -1;              // at the last reading
    size_t sessions_at_reading = 0;
    Clock::time_point last_move{};
    int engines = 0;  // 0: not known
  };
  std::vector<Worker> workers;
  double cpu_idle_cores = -1;
  Clock::time_point last_reading{};
  bool read_once = false;
  uint64_t serial = 0;
  uint64_t moves = 0;

  void ReadIfDue(Clock::time_point now) {  // mu held
    if (!sampler || (read_once && now - last_reading < policy.sample_every)) return;
    const DecodeLoad load = sampler();
    for (size_t w = 0; w < workers.size(); ++w) {
      workers[w].busy = w < load.engine_busy.size() ? load.engine_busy[w] : -1;
      workers[w].sessions_at_reading = workers[w].tickets.size();
    }
    cpu_idle_cores = load.cpu_idle_cores;
    last_reading = now;
    read_once = true;
  }

  // From the last reading only. Sessions placed since are not added at the reading's
  // share each: an engine session is bound by its decode latency, not by the engines'
  // throughput, so NVML's busy share does not grow in step with them, and such a guess
  // sent most of a burst to the CPU decoder, which costs five times the CPU a frame and
  // has a third of the engines' throughput (conveyor-bench-daemon, 32 sessions of 1080p
  // H.264 on the GPU host: 26 of 32 on the CPU, 1 562 frames/s against 2 937 with every
  // session on the engines). Too many sessions on the engines share them; moves (Tick)
  // take the surplus off once a reading shows them the bottleneck.
  // Never with an engine free: fewer engine sessions than engines.
  bool Bottleneck(const Worker& w) const {
    if (w.engines > 0 && w.tickets.size() < static_cast<size_t>(w.engines)) return false;
    return w.busy >= policy.engine_busy && cpu_idle_cores >= policy.spare_cores;
  }
};

DecodeBalancer::DecodeBalancer(int workers, Sampler sampler, Policy policy)
    : state_(std::make_shared<Ticket::State>()) {
  state_->sampler = std::move(sampler);
  state_->policy = policy;
  state_->workers.resize(workers > 0 ? workers : 0);
}

DecodeBalancer::Sampler DecodeBalancer::SystemSampler(const std::vector<std::string>& pci_bus_ids) {
  bool any = false;
  for (const std::string& id : pci_bus_ids) any = any || !id.empty();
  if (!any) return nullptr;
  std::shared_ptr<EngineUtilization> engines = EngineUtilization::Open();
  if (!engines) return nullptr;
  auto cpu = std::make_shared<CpuIdle>();
  return [engines, cpu, pci_bus_ids]() {
    DecodeLoad load;
    for (const std::string& id : pci_bus_ids) {
      StatusOr<double> busy = id.empty() ? StatusOr<double>(Unavailable("no engines")) : engines->Busy(id);
      load.engine_busy.push_back(busy.ok() ? *busy : -1);
    }
    StatusOr<double> idle = cpu->IdleCores();
    load.cpu_idle_cores = idle.ok() ? *idle : -1;
    return load;
  };
}

DecodeBalancer::Ticket::~Ticket() {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto& tickets = state_->workers[worker_].tickets;
  for (auto it = tickets.begin(); it != tickets.end(); ++it) {
    if (*it == this) {
      tickets.erase(it);
      break;
    }
  }
}

void DecodeBalancer::SetEngines(int worker, int engines) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (worker >= 0 && worker < static_cast<int>(state_->workers.size())) state_->workers[worker].engines = engines;
}

std::string DecodeBalancer::Place(int worker, Clock::time_point now) {
  Ticket::State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (worker < 0 || worker >= static_cast<int>(s.workers.size())) return "";
  s.ReadIfDue(now);
  Ticket::State::Worker& w = s.workers[worker];
  if (s.Bottleneck(w)) {
    char why[200];
    std::snprintf(why, sizeof why,
                  "the video engines are the bottleneck (%.0f %% busy, %zu of this daemon's sessions on them) "
                  "and %.1f CPU cores are idle",
                  100 * w.busy, w.tickets.size(), s.cpu_idle_cores);
    return why;
  }
  return "";
}

std::shared_ptr<DecodeBalancer::Ticket> DecodeBalancer::Register(int worker) {
  Ticket::State& s = *state_;
  auto t = std::shared_ptr<Ticket>(new Ticket());
  t->state_ = state_;
  std::lock_guard<std::mutex> lock(s.mu);
  t->worker_ = worker >= 0 && worker < static_cast<int>(s.workers.size()) ? worker : 0;
  t->serial_ = ++s.serial;
  if (!s.workers.empty()) s.workers[t->worker_].tickets.push_back(t.get());
  return t;
}

void DecodeBalancer::Tick(int worker, Clock::time_point now) {
  Ticket::State& s = *state_;
  std::unique_lock<std::mutex> lock(s.mu, std::try_to_lock);
  if (!lock || worker < 0 || worker >= static_cast<int>(s.workers.size())) return;  // another session reads
  s.ReadIfDue(now);
  Ticket::State::Worker& w = s.workers[worker];
  if (!s.Bottleneck(w) || now - w.last_move < s.policy.move_every) return;
  for (auto it = w.tickets.rbegin(); it != w.tickets.rend(); ++it) {
    if ((*it)->move_.load(std::memory_order_relaxed)) continue;
    (*it)->move_.store(true, std::memory_order_relaxed);
    w.last_move = now;
    ++s.moves;
    // The moved session's share leaves the engines; until the next reading shows it,
    // count it off so that one reading does not move several sessions.
    if (w.sessions_at_reading > 0) {
      w.busy -= w.busy / static_cast<double>(w.sessions_at_reading);
      --w.sessions_at_reading;
    }
    return;
  }
}

uint64_t DecodeBalancer::moves() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->moves;
}

}  // namespace conveyor
