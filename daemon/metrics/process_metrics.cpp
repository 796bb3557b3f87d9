// process_* families from /proc/self (see process_metrics.h).
#include "process_metrics.h"

#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>

namespace conveyor::metrics {
namespace {

StatusOr<std::string> ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return Unavailable(std::string("cannot open ") + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

StatusOr<double> ParseNumber(const std::string& field, const char* what) {
  char* end = nullptr;
  const double v = std::strtod(field.c_str(), &end);
  if (field.empty() || end == nullptr || *end != '\0') {
    return InvalidArgument(std::string("/proc stat: ") + what + " is '" + field + "', not a number");
  }
  return v;
}

double OrNaN(const StatusOr<double>& v) { return v.ok() ? v.value() : std::nan(""); }

MetricSpec Spec(const char* name, const char* help) {
  MetricSpec s;
  s.name = name;
  s.help = help;
  return s;
}

}  // namespace

StatusOr<ProcStat> ParseProcStat(const std::string& text, long clock_ticks_per_s, long page_bytes) {
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return InvalidArgument("/proc stat: no ')' after the command name");
  std::istringstream rest(text.substr(paren + 1));
  // After the name: field 3 (state) onwards; proc(5) numbers them from 1.
  std::vector<std::string> fields;
  std::string f;
  while (rest >> f) fields.push_back(f);
  const auto field = [&](size_t number) { return fields[number - 3]; };
  if (fields.size() < 24 - 2) {
    return InvalidArgument("/proc stat: " + std::to_string(fields.size() + 2) + " fields, fewer than 24");
  }
  if (clock_ticks_per_s <= 0 || page_bytes <= 0) return InvalidArgument("/proc stat: no clock tick or page size");
  ASSIGN_OR_RETURN(double utime, ParseNumber(field(14), "utime"));
  ASSIGN_OR_RETURN(double stime, ParseNumber(field(15), "stime"));
  ASSIGN_OR_RETURN(double start, ParseNumber(field(22), "starttime"));
  ASSIGN_OR_RETURN(double vsize, ParseNumber(field(23), "vsize"));
  ASSIGN_OR_RETURN(double rss, ParseNumber(field(24), "rss"));
  const double ticks = static_cast<double>(clock_ticks_per_s);
  ProcStat s;
  s.cpu_seconds = (utime + stime) / ticks;
  s.start_since_boot_s = start / ticks;
  s.virtual_bytes = vsize;
  s.resident_bytes = rss * static_cast<double>(page_bytes);
  return s;
}

StatusOr<double> ParseBootTime(const std::string& proc_stat_text) {
  std::istringstream lines(proc_stat_text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("btime ", 0) == 0) return ParseNumber(line.substr(6), "btime");
  }
  return InvalidArgument("/proc/stat has no btime line");
}

StatusOr<ProcStat> ReadProcStat() {
  ASSIGN_OR_RETURN(std::string text, ReadFile("/proc/self/stat"));
  return ParseProcStat(text, sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE));
}

StatusOr<double> CountOpenFds() {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir("/proc/self/fd"), closedir);
  if (!dir) return Unavailable("cannot open /proc/self/fd");
  double n = 0;
  while (const dirent* e = readdir(dir.get())) {
    if (e->d_name[0] != '.') ++n;
  }
  return n;
}

StatusOr<double> MaxFds() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return Unavailable("getrlimit(RLIMIT_NOFILE) failed");
  if (limit.rlim_cur == RLIM_INFINITY) return std::numeric_limits<double>::infinity();
  return static_cast<double>(limit.rlim_cur);
}

StatusOr<double> ProcessStartTime() {
  ASSIGN_OR_RETURN(ProcStat stat, ReadProcStat());
  ASSIGN_OR_RETURN(std::string system, ReadFile("/proc/stat"));
  ASSIGN_OR_RETURN(double boot, ParseBootTime(system));
  return boot + stat.start_since_boot_s;
}

StatusOr<std::vector<ScopedCallback>> RegisterProcessMetrics(Registry& r) {
  // The start time cannot change: read once, so a scrape costs one /proc/stat read less.
  // Without /proc/stat (a unit with ProcSubset=pid) it is NaN; the daemon still starts.
  const double started = OrNaN(ProcessStartTime());
  ASSIGN_OR_RETURN(GaugeFamily * start_family,
                   r.AddGauge(Spec("process_start_time_seconds",
                                   "Start time of the process since unix epoch in seconds.")));
  ASSIGN_OR_RETURN(Gauge * start, start_family->WithLabels({}));
  start->Set(started);

  const auto stat = [](double ProcStat::*field) {
    return [field] {
      StatusOr<ProcStat> s = ReadProcStat();
      return s.ok() ? (*s).*field : std::nan("");
    };
  };
  std::vector<ScopedCallback> bound;
  const auto bind = [&bound](StatusOr<CallbackGaugeFamily*> family, std::function<double()> fn) -> Status {
    if (!family.ok()) return family.status();
    ASSIGN_OR_RETURN(ScopedCallback b, (*family)->Bind({}, std::move(fn)));
    bound.push_back(std::move(b));
    return OkStatus();
  };
  RETURN_IF_ERROR(bind(r.AddCallbackCounter(Spec("process_cpu_seconds_total",
                                                 "Total user and system CPU time spent in seconds.")),
                       stat(&ProcStat::cpu_seconds)));
  RETURN_IF_ERROR(bind(r.AddCallbackGauge(Spec("process_resident_memory_bytes", "Resident memory size in bytes.")),
                       stat(&ProcStat::resident_bytes)));
  RETURN_IF_ERROR(bind(r.AddCallbackGauge(Spec("process_virtual_memory_bytes", "Virtual memory size in bytes.")),
                       stat(&ProcStat::virtual_bytes)));
  RETURN_IF_ERROR(bind(r.AddCallbackGauge(Spec("process_open_fds", "Number of open file descriptors.")),
                       [] { return OrNaN(CountOpenFds()); }));
  RETURN_IF_ERROR(bind(r.AddCallbackGauge(Spec("process_max_fds", "Maximum number of open file descriptors.")),
                       [] { return OrNaN(MaxFds()); }));
  return bound;
}

}  // namespace conveyor::metrics
