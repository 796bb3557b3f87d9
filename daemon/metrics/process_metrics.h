// The process_* families every Prometheus client library exports (resident and virtual
// memory, CPU seconds, open and maximum file descriptors, start time), read from
// /proc/self and getrlimit at scrape time, so dashboards and alerts written for any
// Prometheus-instrumented service fit conveyord as they are.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "metrics_registry.h"
#include "status.h"

namespace conveyor::metrics {

// One reading of /proc/self/stat, in base units.
struct ProcStat {
  double cpu_seconds = 0;         // utime + stime
  double start_since_boot_s = 0;  // starttime
  double virtual_bytes = 0;       // vsize
  double resident_bytes = 0;      // rss pages * page size
};

// Parses the text of /proc/<pid>/stat. The command name (field 2) may hold spaces and
// parentheses, so the fields are counted from its last ')'. INVALID_ARGUMENT when the
// text is cut short or a field is not a number.
StatusOr<ProcStat> ParseProcStat(const std::string& text, long clock_ticks_per_s, long page_bytes);

// `btime` of /proc/stat: the Unix time the system booted. INVALID_ARGUMENT without one.
StatusOr<double> ParseBootTime(const std::string& proc_stat_text);

StatusOr<ProcStat> ReadProcStat();
// Entries of /proc/self/fd, the one that reads it included, as the other clients count.
StatusOr<double> CountOpenFds();
// The soft RLIMIT_NOFILE.
StatusOr<double> MaxFds();
// Unix time the process started: boot time + starttime.
StatusOr<double> ProcessStartTime();

// Registers the six process_* families in `registry` and binds them to this process.
// Keep the returned bindings as long as the registry is scraped. A reading that fails at
// scrape time (no /proc) exports NaN rather than a wrong number.
StatusOr<std::vector<ScopedCallback>> RegisterProcessMetrics(Registry& registry);

}  // namespace conveyor::metrics
