// Formatting and the exit-code policy of the doctor (see doctor_report.h).
#include "doctor_report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace conveyor::doctor {

const char* VerdictTag(Verdict v) {
  switch (v) {
    case Verdict::kOk: return "[ ok ]";
    case Verdict::kWarn: return "[warn]";
    case Verdict::kFail: return "[FAIL]";
    case Verdict::kSkip: return "[skip]";
  }
  return "[????]";
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk: return "ok";
    case Verdict::kWarn: return "warn";
    case Verdict::kFail: return "fail";
    case Verdict::kSkip: return "skip";
  }
  return "unknown";
}

std::string FormatCheck(const CheckResult& c) {
  std::string name = c.name + ":";
  constexpr size_t kNameWidth = 30;
  if (name.size() < kNameWidth) name.append(kNameWidth - name.size(), ' ');
  else name += ' ';
  return std::string(VerdictTag(c.verdict)) + " " + name + c.detail;
}

Outcome DecideOutcome(bool has_backend, bool device_found, const std::vector<CheckResult>& checks) {
  if (!has_backend) return Outcome::kNoBackend;
  if (!device_found) return Outcome::kNoDevice;
  for (const CheckResult& c : checks) {
    if (c.verdict == Verdict::kFail) return Outcome::kGpuBlocked;
  }
  return Outcome::kGpuUsable;
}

const char* ExpectName(Expect e) {
  switch (e) {
    case Expect::kNone: return "";
    case Expect::kCpu: return "cpu";
    case Expect::kGpu: return "gpu";
  }
  return "";
}

int ExitCodeFor(Outcome o, Expect e) {
  if (e == Expect::kCpu) return kExitOk;  // the CPU worker serves whatever the GPU's state
  switch (o) {
    case Outcome::kGpuUsable: return kExitOk;
    case Outcome::kGpuBlocked: return kExitGpuBlocked;
    case Outcome::kNoDevice: return kExitNoDevice;
    case Outcome::kNoBackend: return kExitNoBackend;
  }
  return kExitGpuBlocked;
}

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kGpuUsable: return "gpu_usable";
    case Outcome::kGpuBlocked: return "gpu_blocked";
    case Outcome::kNoDevice: return "no_device";
    case Outcome::kNoBackend: return "no_backend";
  }
  return "unknown";
}

std::string Conclusion(Outcome o, const std::string& reason) {
  switch (o) {
    case Outcome::kGpuUsable:
      return "GPU usable: conveyord will use its GPU worker";
    case Outcome::kGpuBlocked:
      return "GPU present but not usable (" + reason + "): fix the failed checks above; conveyord will fall back to its CPU worker";
    case Outcome::kNoDevice:
      return "no usable GPU device (" + reason + "): conveyord will use its CPU worker";
    case Outcome::kNoBackend:
      return "no GPU backend in this build: conveyord will use its CPU worker";
  }
  return "unknown outcome";
}

std::string ExpectationLine(Outcome o, Expect e) {
  switch (e) {
    case Expect::kNone:
      return "";
    case Expect::kCpu:
      if (o == Outcome::kGpuUsable || o == Outcome::kGpuBlocked) {
        return "expected: the CPU worker. It serves here, but with workers = \"auto\" conveyord tries the GPU "
               "first: set workers = \"cpu\" to keep it off";
      }
      return "expected: the CPU worker. It serves here";
    case Expect::kGpu:
      return o == Outcome::kGpuUsable ? "expected: the GPU worker. It serves here"
                                      : "expected: the GPU worker. It does NOT serve here: conveyord would run on its "
                                        "CPU worker (with workers = \"gpu\" it refuses to start)";
  }
  return "";
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 2);
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  return out;
}

namespace {

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

}  // namespace

std::string FormatJsonLine(const std::string& backend, Outcome o, const std::vector<CheckResult>& checks,
                           Expect e) {
  std::ostringstream j;
  j << "{\"doctor\":\"conveyor\",\"backend\":\"" << JsonEscape(backend) << "\",\"outcome\":\"" << OutcomeName(o)
    << '"';
  if (e != Expect::kNone) j << ",\"expect\":\"" << ExpectName(e) << '"';
  j << ",\"exit_code\":" << ExitCodeFor(o, e) << ",\"checks\":[";
  for (size_t i = 0; i < checks.size(); ++i) {
    const CheckResult& c = checks[i];
    if (i > 0) j << ',';
    j << "{\"name\":\"" << JsonEscape(c.name) << "\",\"verdict\":\"" << VerdictName(c.verdict)
      << "\",\"detail\":\"" << JsonEscape(c.detail) << '"';
    if (!c.metrics.empty()) {
      j << ",\"metrics\":{";
      for (size_t m = 0; m < c.metrics.size(); ++m) {
        if (m > 0) j << ',';
        j << '"' << JsonEscape(c.metrics[m].first) << "\":" << JsonNumber(c.metrics[m].second);
      }
      j << '}';
    }
    j << '}';
  }
  j << "]}";
  return j.str();
}

std::string FormatBytes(double bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return FormatFixed(bytes, u == 0 ? 0 : 1) + " " + kUnits[u];
}

std::string FormatFixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

}  // namespace conveyor::doctor
