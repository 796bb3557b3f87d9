// RunDoctor: gathers the checks of each section, prints them, and turns them into a
// conclusion and an exit code (see doctor.h).
#include "doctor.h"

#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "doctor_report.h"
#include "env_check.h"
#include "gpu_checks.h"
#include "loader_check.h"

namespace conveyor::doctor {

namespace {

StatusOr<long long> ParseInt(const std::string& flag, const std::string& text, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || end == nullptr || *end != '\0' || v < lo || v > hi) {
    return InvalidArgument(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           "], got '" + text + "'");
  }
  return v;
}

// The loader checks that matter for this build's backend.
std::vector<CheckResult> LoaderChecks(const std::string& backend) {
  auto text = RunLdconfig();
  if (!text.ok()) return {CheckResult{"loader", Verdict::kSkip, text.status().ToString(), {}}};
  std::vector<CheckResult> out;
  if (backend == "hip-amd") {
    out.push_back(CheckLibraryCopies(*text, "libhsa-runtime64", ResolveRealPath, Verdict::kWarn,
                                     "the HIP runtime needs it (libhsa-runtime64.so.1)"));
  } else if (backend == "hip-nvidia") {
    out.push_back(CheckLibraryCopies(*text, "libcuda", ResolveRealPath, Verdict::kWarn,
                                     "the NVIDIA driver installs it; the CUDA runtime loads libcuda.so.1"));
  } else {
    // A CPU build loads neither, whatever the host has: nothing to judge.
    out.push_back(CheckResult{"loader libhsa-runtime64", Verdict::kSkip,
                              "not checked: only a HIP build for AMD GPUs loads it", {}});
    out.push_back(CheckResult{"loader libcuda", Verdict::kSkip, "not checked: only a CUDA build loads it", {}});
  }
  return out;
}

void PrintSection(std::ostream& out, const std::string& title, const std::vector<CheckResult>& checks) {
  out << "== " << title << " ==\n";
  for (const CheckResult& c : checks) out << FormatCheck(c) << '\n';
}

}  // namespace

StatusOr<size_t> ParseByteSize(const std::string& text) {
  if (text.empty()) return InvalidArgument("byte size: empty");
  std::string digits = text;
  size_t shift = 0;
  switch (text.back()) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    default: break;
  }
  if (shift != 0) digits.pop_back();
  ASSIGN_OR_RETURN(const long long v, ParseInt("byte size", digits, 1, (1LL << 40) >> shift));
  return static_cast<size_t>(v) << shift;
}

StatusOr<DoctorOptions> ParseDoctorArgs(const std::vector<std::string>& args, bool* help) {
  DoctorOptions o;
  if (help != nullptr) *help = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    const size_t eq = flag.find('=');
    const bool inline_value = flag.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
    }
    auto take_value = [&]() -> StatusOr<std::string> {
      if (inline_value) return value;
      if (i + 1 >= args.size()) return InvalidArgument(flag + " needs a value");
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") {
      if (help != nullptr) *help = true;
    } else if (flag == "--json") {
      o.json = true;
    } else if (flag == "--bytes") {
      ASSIGN_OR_RETURN(const std::string v, take_value());
      ASSIGN_OR_RETURN(o.bandwidth_bytes, ParseByteSize(v));
      if (o.bandwidth_bytes < 4096) return InvalidArgument("--bytes: at least 4096, got " + v);
    } else if (flag == "--reps") {
      ASSIGN_OR_RETURN(const std::string v, take_value());
      ASSIGN_OR_RETURN(const long long n, ParseInt("--reps", v, 1, 1000));
      o.reps = static_cast<int>(n);
    } else if (flag == "--expect") {
      ASSIGN_OR_RETURN(const std::string v, take_value());
      if (v == "cpu") {
        o.expect = Expect::kCpu;
      } else if (v == "gpu") {
        o.expect = Expect::kGpu;
      } else {
        return InvalidArgument("--expect: cpu or gpu, got '" + v + "'");
      }
    } else if (flag == "--device") {
      ASSIGN_OR_RETURN(const std::string v, take_value());
      ASSIGN_OR_RETURN(const long long n, ParseInt("--device", v, 0, 1023));
      o.device = static_cast<int>(n);
    } else {
      return InvalidArgument("unknown argument '" + args[i] + "'");
    }
  }
  return o;
}

std::string DoctorUsage(const std::string& program) {
  return "usage: " + program +
         " [--bytes N[K|M|G]] [--reps N] [--device N] [--expect cpu|gpu] [--json]\n"
         "Checks what conveyord's GPU worker needs: devices, runtime and driver versions, duplicate\n"
         "runtime libraries, device node access, a synchronous copy, a kernel, copy/kernel overlap on\n"
         "two streams, pinned and pageable bandwidth, and the runtime's environment variables.\n"
         "  --bytes N   size of the overlap and bandwidth copies (default 64M)\n"
         "  --reps N    timed repetitions per measurement, best kept (default 5)\n"
         "  --device N  device the copy checks run on (default 0)\n"
         "  --expect cpu|gpu\n"
         "              what the deployment needs, for scripts that gate on the exit code: cpu exits 0\n"
         "              wherever conveyord's CPU worker serves (a CPU build included); gpu exits 0 only\n"
         "              where a GPU is usable\n"
         "  --json      also print one machine-readable line at the end\n"
         "Exit codes: 0 GPU usable (or, with --expect cpu, always), 1 a check failed, 2 usage, 3 no GPU\n"
         "backend in this build, 4 no device.\n";
}

int RunDoctor(const DoctorOptions& options, std::ostream& out) {
  const GpuReport gpu = RunGpuChecks(options);
  const std::vector<CheckResult> loader = LoaderChecks(gpu.backend);
  const std::vector<CheckResult> env = DescribeEnvironment(GetEnv);

  out << "conveyor doctor: GPU backend " << gpu.backend
      << (gpu.has_backend ? "" : " (this build has no GPU backend: CONVEYOR_GPU=off)") << '\n';
  PrintSection(out, "Devices", gpu.devices);
  std::vector<CheckResult> access = loader;
  access.insert(access.end(), gpu.access.begin(), gpu.access.end());
  PrintSection(out, "Loader and device access", access);
  if (gpu.has_backend) {
    PrintSection(out, "Copies and kernels (device " + std::to_string(options.device) + ", " +
                          FormatBytes(static_cast<double>(options.bandwidth_bytes)) + ")",
                 gpu.copies);
  }
  PrintSection(out, "Environment", env);

  std::vector<CheckResult> all = gpu.devices;
  all.insert(all.end(), access.begin(), access.end());
  all.insert(all.end(), gpu.copies.begin(), gpu.copies.end());
  const Outcome outcome = DecideOutcome(gpu.has_backend, gpu.device_found, all);
  std::string reason = gpu.no_device_reason;
  if (outcome == Outcome::kGpuBlocked) {
    for (const CheckResult& c : all) {
      if (c.verdict == Verdict::kFail) {
        reason = c.name + ": " + c.detail;
        break;
      }
    }
  }
  all.insert(all.end(), env.begin(), env.end());
  out << "== Conclusion ==\n" << Conclusion(outcome, reason) << '\n';
  const std::string expectation = ExpectationLine(outcome, options.expect);
  if (!expectation.empty()) out << expectation << '\n';
  if (options.json) out << FormatJsonLine(gpu.backend, outcome, all, options.expect) << '\n';
  out.flush();
  return ExitCodeFor(outcome, options.expect);
}

int DoctorMain(const std::string& program, const std::vector<std::string>& args) {
  bool help = false;
  auto options = ParseDoctorArgs(args, &help);
  if (!options.ok()) {
    std::cerr << program << ": " << options.status().message() << '\n' << DoctorUsage(program);
    return kExitUsage;
  }
  if (help) {
    std::cout << DoctorUsage(program);
    return kExitOk;
  }
  return RunDoctor(*options, std::cout);
}

}  // namespace conveyor::doctor
