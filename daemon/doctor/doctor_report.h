// The doctor's results as values: one CheckResult per checklist line, how a line is
// printed, the machine-readable line, and the exit-code policy. Pure functions, so the
// tests can pin the output format and the policy without a GPU.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace conveyor::doctor {

enum class Verdict { kOk, kWarn, kFail, kSkip };

// "[ ok ]", "[warn]", "[FAIL]" or "[skip]".
const char* VerdictTag(Verdict v);
// "ok", "warn", "fail" or "skip" (the JSON spelling).
const char* VerdictName(Verdict v);

struct CheckResult {
  std::string name;    // short and stable: "devices", "sync-copy", "overlap", ...
  Verdict verdict = Verdict::kSkip;
  std::string detail;  // one line, with the numbers behind the verdict
  // Measured values for the JSON line, in the units their names say ("h2d_pinned_gbps").
  std::vector<std::pair<std::string, double>> metrics;
};

// "[ ok ] name: detail", padded so the details line up.
std::string FormatCheck(const CheckResult& c);

// What the checks add up to. A FAIL always blocks GPU use: a check only fails for what
// stops conveyord's GPU worker (no device, a broken copy, no access to the device node).
enum class Outcome {
  kGpuUsable,    // every check passed or warned
  kGpuBlocked,   // a device is there but a check failed
  kNoDevice,     // a GPU build, and the runtime found no usable device
  kNoBackend,    // a CPU-only build (CONVEYOR_GPU=off)
};

// Process exit codes, one per outcome so scripts can tell them apart.
inline constexpr int kExitOk = 0;
inline constexpr int kExitGpuBlocked = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitNoBackend = 3;
inline constexpr int kExitNoDevice = 4;

// What the deployment expects of the host (--expect): nothing said (the exit code tells
// the outcome), conveyord's CPU worker (a CPU-only deployment: every outcome lets it
// serve, so the exit code is 0), or its GPU worker (0 only when a GPU is usable).
enum class Expect { kNone, kCpu, kGpu };
const char* ExpectName(Expect e);  // "", "cpu", "gpu"

Outcome DecideOutcome(bool has_backend, bool device_found, const std::vector<CheckResult>& checks);
int ExitCodeFor(Outcome o, Expect e = Expect::kNone);
// One line that says what the operator can expect from conveyord. `reason` is the
// runtime's explanation where there is one (no device) or the first failure's detail.
std::string Conclusion(Outcome o, const std::string& reason);
// The line after it that says whether the outcome meets the expectation ("" for kNone).
std::string ExpectationLine(Outcome o, Expect e);
const char* OutcomeName(Outcome o);

// JSON string escaping (quotes, backslash, control characters).
std::string JsonEscape(const std::string& s);

// {"doctor":"conveyor","backend":...,"outcome":...,"exit_code":...,"checks":[...]} on one line.
// With an expectation, "expect" follows "outcome" and exit_code is ExitCodeFor(o, e).
std::string FormatJsonLine(const std::string& backend, Outcome o, const std::vector<CheckResult>& checks,
                           Expect e = Expect::kNone);

// Human-readable helpers used in details.
std::string FormatBytes(double bytes);          // "64.0 MiB", "139.8 GiB"
std::string FormatFixed(double v, int decimals);

}  // namespace conveyor::doctor
