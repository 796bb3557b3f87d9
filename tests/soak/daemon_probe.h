// What the soak test reads from the running daemon besides its streams: GetServerStatus,
// ListSessions, the Prometheus exposition on its metrics endpoint, and a wait until it has
// nothing left in flight.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "daemon_process.h"
#include "status.h"

namespace conveyor::soak {

StatusOr<v1::ServerStatus> GetServerStatus(v1::Transcoder::Stub* stub);

// The session `id` as ListSessions shows it; nullopt once it is gone; an error when the
// call fails.
StatusOr<std::optional<v1::SessionInfo>> FindSession(v1::Transcoder::Stub* stub, const std::string& id);

// Worker 0's frames done + failed: the CPU worker asks its fault hook once per frame it
// takes, so this is how many times the hook has been asked.
uint64_t WorkerCalls(const v1::ServerStatus& status);

// Waits until no session is active, worker 0 has no lanes and no queued frames, and its
// frame counters have stopped moving (a failed session's last frames may still be in
// the worker after its stream ended). Returns the status seen then.
StatusOr<v1::ServerStatus> WaitForQuiet(v1::Transcoder::Stub* stub, double timeout_s);

// GET /metrics: each family's value summed over its label sets ("conveyor_queue_depth").
// Histograms show as their _count and _sum series.
StatusOr<std::map<std::string, double>> ScrapeMetrics(int port);
// GET /metrics: every series as exposed, by its name and labels
// ("conveyor_decode_sessions_total{decoder=\"gpu\"}").
StatusOr<std::map<std::string, double>> ScrapeSeries(int port);
// Series (ScrapeSeries) summed by family, as ScrapeMetrics gives them.
std::map<std::string, double> SumByFamily(const std::map<std::string, double>& series);

// Waits until conveyor_idle_heap_releases_total is past `seen`; false at the timeout.
bool WaitForHeapRelease(int metrics_port, double seen, double timeout_s);

// The daemon's RSS once it has stopped moving (by 1 MiB in 1.5 s; at most 10 s): the last
// sessions' threads and connections are still being let go when it turns idle.
uint64_t SettledRss(const e2e::DaemonProcess& daemon);

// The process is alive and not a zombie (it has not exited, so it never restarted).
bool ProcessAlive(pid_t pid);

}  // namespace conveyor::soak
