// DaemonConfig's checks and comparisons, and the TOML writer, over the option table
// (config_fields.h).
#include "daemon_config.h"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "config_fields.h"
#include "logging.h"
#include "quoted_string.h"

#ifndef CONVEYOR_VERSION_STRING
#define CONVEYOR_VERSION_STRING "0.0.0"
#endif

namespace conveyor::config {
namespace {

std::string FormatNumber(double v) {
  if (std::isfinite(v) && std::fabs(v) < 9e15 && v == std::floor(v)) {
    return std::to_string(static_cast<long long>(v));
  }
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// TOML wants a float to look like one: "60" would read back as an integer.
std::string FormatTomlFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

std::string HumanBytes(uint64_t v) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  std::string best;
  uint64_t unit = 1024;
  for (const char* name : kUnits) {
    if (v >= unit && v % unit == 0) best = std::to_string(v / unit) + " " + name;
    unit <<= 10;
  }
  return best;
}

// The numeric value of a bounded field, for the range check.
std::optional<double> NumericValue(const DaemonConfig& c, const Field& f) {
  return std::visit(Overloaded{
                        [&](int DaemonConfig::*m) -> std::optional<double> { return c.*m; },
                        [&](uint64_t DaemonConfig::*m) -> std::optional<double> {
                          return static_cast<double>(c.*m);
                        },
                        [&](double DaemonConfig::*m) -> std::optional<double> { return c.*m; },
                        [&](auto) -> std::optional<double> { return std::nullopt; },
                    },
                    f.member);
}

}  // namespace

std::string FieldName(const Field& f) { return std::string(f.table) + "." + f.key; }

std::string RenderValue(const DaemonConfig& c, const Field& f) {
  return std::visit(
      Overloaded{
          [&](bool DaemonConfig::*m) -> std::string { return c.*m ? "true" : "false"; },
          [&](int DaemonConfig::*m) { return std::to_string(c.*m); },
          [&](uint64_t DaemonConfig::*m) { return std::to_string(c.*m); },
          [&](double DaemonConfig::*m) { return FormatTomlFloat(c.*m); },
          [&](std::string DaemonConfig::*m) { return QuotedString(c.*m); },
          [&](Addresses DaemonConfig::*m) {
            std::string out = "[";
            for (size_t i = 0; i < (c.*m).size(); ++i) {
              out += (i ? ", " : "") + QuotedString((c.*m)[i].ToString());
            }
            return out + "]";
          },
      },
      f.member);
}

const Field* FindField(const std::string& table, const std::string& key) {
  for (const Field& f : kFields) {
    if (table == f.table && key == f.key) return &f;
  }
  return nullptr;
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

const char* ConveyorVersion() { return CONVEYOR_VERSION_STRING; }

bool operator==(const DaemonConfig& a, const DaemonConfig& b) {
  for (const Field& f : kFields) {
    if (RenderValue(a, f) != RenderValue(b, f)) return false;
  }
  return true;
}

std::vector<std::string> ChangedSettings(const DaemonConfig& a, const DaemonConfig& b) {
  std::vector<std::string> changed;
  for (const Field& f : kFields) {
    if (RenderValue(a, f) != RenderValue(b, f)) changed.push_back(FieldName(f));
  }
  return changed;
}

std::vector<ListenAddress> DaemonConfig::EffectiveListen() const {
  if (!listen.empty()) return listen;
  return {DefaultListenAddress()};
}

Status DaemonConfig::Validate() const {
  for (const Field& f : kFields) {
    const std::optional<double> v = NumericValue(*this, f);
    if (!v || f.min == f.max) continue;
    const bool below = f.min_exclusive ? !(*v > f.min) : !(*v >= f.min);
    if (below || !(*v <= f.max) || !std::isfinite(*v)) {
      const std::string range = f.min_exclusive ? "more than " + FormatNumber(f.min) +
                                                      " and at most " + FormatNumber(f.max)
                                                : FormatNumber(f.min) + ".." + FormatNumber(f.max);
      return InvalidArgument(FieldName(f) + " = " + FormatNumber(*v) + " is out of range (" + range +
                             ")");
    }
  }
  for (size_t i = 0; i < listen.size(); ++i) {
    const ListenAddress& a = listen[i];
    if (a.kind == ListenAddress::Kind::kTcp && !a.IsLoopback() && !allow_insecure_tcp && !tls_enabled()) {
      return InvalidArgument("server.listen: " + a.ToString() +
                             " is reachable from other hosts without TLS; set "
                             "server.tls_cert_file and server.tls_key_file for TLS, or "
                             "server.allow_insecure_tcp = true (--allow-insecure-tcp) to "
                             "serve it anyway");
    }
    for (size_t j = 0; j < i; ++j) {
      if (listen[j] == a)
        return InvalidArgument("server.listen: " + a.ToString() + " is listed twice");
    }
  }
  if (tls_cert_file.empty() != tls_key_file.empty()) {
    return InvalidArgument(tls_cert_file.empty()
                               ? "server.tls_key_file: set without server.tls_cert_file (both or neither)"
                               : "server.tls_cert_file: set without server.tls_key_file (both or neither)");
  }
  if (!tls_client_ca_file.empty() && !tls_enabled()) {
    return InvalidArgument(
        "server.tls_client_ca_file: mutual TLS needs server.tls_cert_file and server.tls_key_file");
  }
  if (!metrics_listen.empty()) {
    auto a = ParseListenAddress(metrics_listen);
    if (!a.ok()) return a.status().WithContext("server.metrics_listen");
    if (a->kind != ListenAddress::Kind::kTcp) {
      return InvalidArgument("server.metrics_listen: '" + metrics_listen +
                             "' must be HOST:PORT (the HTTP endpoint is TCP only)");
    }
  }
  RETURN_IF_ERROR(CheckLogLevel(log_level).WithContext("server.log_level"));
  if (workers != "auto" && workers != "gpu" && workers != "cpu") {
    return InvalidArgument("workers.workers: unknown value '" + workers +
                           "' (expected auto, gpu or cpu)");
  }
  if (gpu_wait != "auto" && gpu_wait != "spin" && gpu_wait != "yield" && gpu_wait != "block") {
    return InvalidArgument("workers.gpu_wait: unknown value '" + gpu_wait + "' (expected auto, spin, yield or block)");
  }
  if (untagged_matrix != "bt601" && untagged_matrix != "bt709" && untagged_matrix != "by-size") {
    return InvalidArgument("color.untagged_matrix: unknown value '" + untagged_matrix +
                           "' (expected bt601, bt709 or by-size)");
  }
  if (decode_mode != "auto" && decode_mode != "gpu" && decode_mode != "cpu") {
    return InvalidArgument("decode.mode: unknown value '" + decode_mode + "' (expected auto, gpu or cpu)");
  }
  if (decode_frames != "device" && decode_frames != "host") {
    return InvalidArgument("decode.frames: unknown value '" + decode_frames + "' (expected device or host)");
  }
  return OkStatus();
}

std::string RenderConfigToml(const DaemonConfig& config) {
  const DaemonConfig defaults;
  std::string out =
      "# conveyord configuration: every key, each with its comment.\n"
      "#\n"
      "# conveyord reads /etc/conveyor/conveyord.toml, or the file given with --config.\n"
      "# Keys left out keep their defaults; flags override the file (conveyord --help).\n"
      "# Generated by RenderConfigToml() in daemon/config/daemon_config.cpp: print the\n"
      "# defaults with `conveyord --config \"\" --print-config`.\n";
  const char* table = "";
  for (const Field& f : kFields) {
    if (std::string(table) != f.table) {
      table = f.table;
      out += "\n[" + std::string(table) + "]\n";
    } else {
      out += "\n";
    }
    std::istringstream doc(f.doc);
    for (std::string line; std::getline(doc, line);) out += "# " + line + "\n";
    const std::string value = RenderValue(config, f);
    const std::string default_value = RenderValue(defaults, f);
    if (value != default_value) out += "# Default: " + default_value + "\n";
    out += std::string(f.key) + " = " + value;
    if (f.unit == kBytes) {
      const std::string human = HumanBytes(std::stoull(value));
      if (!human.empty()) out += "  # " + human;
    }
    out += "\n";
  }
  return out;
}

}  // namespace conveyor::config
