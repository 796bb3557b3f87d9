// The table of conveyord's options (file table, key, flag, comment, range) and the four
// things built on it: validation, the TOML reader, the TOML writer and the flags.
#include "daemon_config.h"

#include <sys/stat.h>

#include <toml++/toml.h>
#include <CLI/CLI.hpp>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <type_traits>
#include <variant>

#include "logging.h"

#ifndef CONVEYOR_VERSION_STRING
#define CONVEYOR_VERSION_STRING "0.0.0"
#endif

namespace conveyor::config {
namespace {

using Addresses = std::vector<ListenAddress>;
using Member =
    std::variant<bool DaemonConfig::*, int DaemonConfig::*, uint64_t DaemonConfig::*,
                 double DaemonConfig::*, std::string DaemonConfig::*, Addresses DaemonConfig::*>;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

enum Unit { kNoUnit, kBytes };

struct Field {
  const char* table;  // "server", "limits", "workers"
  const char* key;
  Member member;
  const char* flag;  // "--max-sessions", or nullptr when the file is the only way
  const char* doc;   // comment lines for the file; its first sentence is the flag's help
  double min = 0;    // numeric fields: the accepted range
  double max = 0;
  bool min_exclusive = false;  // (min, max] rather than [min, max]
  Unit unit = kNoUnit;
};

constexpr double kMaxBytes = 1152921504606846976.0;  // 2^60: fits TOML's int64 with room

// The one place that names, documents and bounds every option. DaemonConfig's field
// defaults are the other half; RenderConfigToml(DaemonConfig{}) shows both.
const Field kFields[] = {
    {"server", "listen", &DaemonConfig::listen, "--listen",
     "Addresses to serve the gRPC API on: \"unix:/path\", \"HOST:PORT\", \"[IPv6]:PORT\".\n"
     "Empty: the unix socket /run/conveyor/conveyord.sock when /run/conveyor is writable,\n"
     "else $XDG_RUNTIME_DIR/conveyor/conveyord.sock, else /tmp/conveyor-UID/conveyord.sock."},
    {"server", "socket_group", &DaemonConfig::socket_group, "--socket-group",
     "Group given the unix sockets, which are mode 0660, so that its members may connect.\n"
     "When no group of that name exists the sockets keep the daemon's group. \"\": leave it."},
    {"server", "allow_insecure_tcp", &DaemonConfig::allow_insecure_tcp, "--allow-insecure-tcp",
     "Allow plaintext TCP listen addresses other than loopback. Without TLS anyone who can\n"
     "reach such a port can read the media, and without auth_token_file submit work and\n"
     "cancel sessions."},
    {"server", "tls_cert_file", &DaemonConfig::tls_cert_file, "--tls-cert-file",
     "PEM certificate (chain) of the server. With tls_key_file, TCP listeners serve TLS;\n"
     "unix sockets stay plaintext (their file permissions guard them). \"\": no TLS."},
    {"server", "tls_key_file", &DaemonConfig::tls_key_file, "--tls-key-file",
     "PEM private key of tls_cert_file. Both are set, or neither."},
    {"server", "tls_client_ca_file", &DaemonConfig::tls_client_ca_file, "--tls-client-ca-file",
     "PEM CA certificates for mutual TLS. When set, TCP clients must present a certificate\n"
     "signed by one of them. Needs tls_cert_file."},
    {"server", "auth_token_file", &DaemonConfig::auth_token_file, "--auth-token-file",
     "File of bearer tokens, one per line: TOKEN, or TOKEN admin. When set, every\n"
     "conveyor.v1.Transcoder call needs the metadata \"authorization: Bearer TOKEN\"; a caller\n"
     "sees and cancels only its own sessions unless its token is admin. Health checks and\n"
     "reflection stay open. \"\": no token auth."},
    {"server", "shared_memory", &DaemonConfig::shared_memory, nullptr,
     "Let clients on this host send raw frames through shared memory (RawInput.shared_memory_slots):\n"
     "the daemon serves an attach socket beside the first unix socket (NAME.frames.sock, same\n"
     "mode and group), takes a sealed memfd from the client and maps it read-only. The same\n"
     "socket hands out the daemon's own read-only JPEG slots (JpegFramesOutput.shared_memory_slots).\n"
     "false: no attach socket, and sessions asking for either are refused with FAILED_PRECONDITION."},
    {"server", "metrics_listen", &DaemonConfig::metrics_listen, "--metrics-listen",
     "HOST:PORT of the HTTP endpoint for Prometheus /metrics and health probes; \"\" turns it "
     "off."},
    {"server", "log_level", &DaemonConfig::log_level, "--log-level",
     "Log level: trace, debug, info, warn, error or off."},

    {"limits", "max_sessions", &DaemonConfig::max_sessions, "--max-sessions",
     "Transcode streams served at once; one more is refused with RESOURCE_EXHAUSTED.", 1, 100000},
    {"limits", "max_width", &DaemonConfig::max_width, nullptr,
     "Largest frame width accepted, source or rendition, in pixels.", 1, 16384},
    {"limits", "max_height", &DaemonConfig::max_height, nullptr,
     "Largest frame height accepted, source or rendition, in pixels.", 1, 16384},
    {"limits", "max_frame_rate", &DaemonConfig::max_frame_rate, nullptr,
     "Highest nominal input frame rate accepted, in frames per second.", 0, 10000, true},
    {"limits", "max_session_bytes", &DaemonConfig::max_session_bytes, nullptr,
     "Input bytes one session may send.", 1, kMaxBytes, false, kBytes},
    {"limits", "idle_timeout_s", &DaemonConfig::idle_timeout_s, "--idle-timeout",
     "Seconds a session may go without input read or output written; it then ends with\n"
     "DEADLINE_EXCEEDED.",
     0, 7 * 86400, true},
    {"limits", "session_queue_frames", &DaemonConfig::session_queue_frames, nullptr,
     "Decoded frames a session may have waiting for its worker.", 1, 1024},
    {"limits", "session_output_bytes", &DaemonConfig::session_output_bytes, nullptr,
     "Encoded bytes a session may have queued for its client before it stops submitting\n"
     "frames.",
     65536, kMaxBytes, false, kBytes},
    {"limits", "input_queue_bytes", &DaemonConfig::input_queue_bytes, nullptr,
     "Container bytes buffered per session before gRPC flow control pushes back on the client.",
     65536, INT_MAX, false, kBytes},

    {"workers", "workers", &DaemonConfig::workers, "--workers",
     "Which workers run: auto (every GPU, else the CPU), gpu, cpu."},
    {"workers", "gpu_slots", &DaemonConfig::gpu_slots, "--gpu-slots",
     "Frames in flight per GPU worker: the size of its ring of pinned slots. Each slot pins\n"
     "about 50 MiB of host memory for 3840x2160 limits; the worker also pins a 64 MiB ring\n"
     "that encoded bands are read back into and results lend from. A slot is free once its\n"
     "frame is read back; the worker holds at most twice this many frames, the finished ones\n"
     "waiting to be handed over in order.",
     1, 64},
    {"workers", "gpu_launch_frames", &DaemonConfig::gpu_launch_frames, nullptr,
     "Most frames of the same shape a GPU launch carries; only frames already queued are\n"
     "batched, so it never adds waiting. 1 (no batching) measured best on an H200.",
     1, 4},
    {"workers", "pinned_input_bytes", &DaemonConfig::pinned_input_bytes, nullptr,
     "Page-locked host memory, all sessions together, for assembling raw frames that come in\n"
     "frame_chunk messages: a GPU worker uploads such a frame from where it was assembled\n"
     "instead of copying it into a pinned slot first. A session takes (2 x\n"
     "session_queue_frames + 2) frames of it, 31 MiB at 1080p with the defaults, and leaves\n"
     "it, still locked, to the next session of its size (let go after 60 s unused, or when\n"
     "another size needs the room). One that finds too little left assembles in ordinary\n"
     "memory, and its frames are copied. 0: none.",
     0, kMaxBytes, false, kBytes},
    {"workers", "cpu_threads", &DaemonConfig::cpu_threads, "--cpu-threads",
     "Threads of the CPU worker; 0: one per hardware thread.", 0, 4096},
    {"workers", "decode_threads", &DaemonConfig::decode_threads, nullptr,
     "FFmpeg frame threads per session; 0: FFmpeg's choice (cores + 1, at most 16). The\n"
     "decoder holds about one frame a thread until more input arrives, so a live stream's\n"
     "first frame waits for about this many frames of input: set it low for live input.",
     0, 256},
    {"workers", "drain_timeout_s", &DaemonConfig::drain_timeout_s, "--drain-timeout",
     "On SIGTERM, seconds running sessions get to finish before they are cancelled.", 0, 86400},
};

const char* const kTables[] = {"server", "limits", "workers"};

// Keys read under an old name. The file's comment and --print-config use the new one.
struct OldName {
  const char* table;
  const char* old_key;
  const char* key;
};
const OldName kOldNames[] = {
    // It was named when only raw frames came through shared memory; JPEGs go out that way too.
    {"server", "shared_memory_input", "shared_memory"},
};

std::string Name(const Field& f) { return std::string(f.table) + "." + f.key; }

// The flag's help: the comment's first sentence, its lines joined.
std::string FirstSentence(const char* doc) {
  std::string s(doc);
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  const size_t end = s.find(". ");
  return end == std::string::npos ? s : s.substr(0, end + 1);
}

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

std::string QuoteToml(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
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

std::string RenderValue(const DaemonConfig& c, const Field& f) {
  return std::visit(
      Overloaded{
          [&](bool DaemonConfig::*m) -> std::string { return c.*m ? "true" : "false"; },
          [&](int DaemonConfig::*m) { return std::to_string(c.*m); },
          [&](uint64_t DaemonConfig::*m) { return std::to_string(c.*m); },
          [&](double DaemonConfig::*m) { return FormatTomlFloat(c.*m); },
          [&](std::string DaemonConfig::*m) { return QuoteToml(c.*m); },
          [&](Addresses DaemonConfig::*m) {
            std::string out = "[";
            for (size_t i = 0; i < (c.*m).size(); ++i) {
              out += (i ? ", " : "") + QuoteToml((c.*m)[i].ToString());
            }
            return out + "]";
          },
      },
      f.member);
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

const Field* FindField(const std::string& table, const std::string& key) {
  for (const Field& f : kFields) {
    if (table == f.table && key == f.key) return &f;
  }
  return nullptr;
}

// ---- TOML reading ----

const char* TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

std::string Where(const std::string& source, const toml::source_region& region) {
  return source + ":" + std::to_string(region.begin.line) + ":" +
         std::to_string(region.begin.column);
}

Status KeyError(const std::string& source, const toml::node& n, const std::string& key,
                const std::string& what) {
  return InvalidArgument(Where(source, n.source()) + ": " + key + ": " + what);
}

Status SetFromToml(DaemonConfig* c, const Field& f, const toml::node& n, const std::string& src) {
  const std::string name = Name(f);
  auto wrong = [&](const char* expected) {
    return KeyError(src, n, name, std::string("expected ") + expected + ", got " + TypeName(n));
  };
  return std::visit(Overloaded{
                        [&](bool DaemonConfig::*m) -> Status {
                          if (!n.is_boolean()) return wrong("true or false");
                          c->*m = n.as_boolean()->get();
                          return OkStatus();
                        },
                        [&](int DaemonConfig::*m) -> Status {
                          if (!n.is_integer()) return wrong("an integer");
                          const int64_t v = n.as_integer()->get();
                          if (v < INT_MIN || v > INT_MAX) {
                            return KeyError(src, n, name, std::to_string(v) + " is out of range");
                          }
                          c->*m = static_cast<int>(v);
                          return OkStatus();
                        },
                        [&](uint64_t DaemonConfig::*m) -> Status {
                          if (!n.is_integer()) return wrong("an integer");
                          const int64_t v = n.as_integer()->get();
                          if (v < 0)
                            return KeyError(src, n, name, std::to_string(v) + " is negative");
                          c->*m = static_cast<uint64_t>(v);
                          return OkStatus();
                        },
                        [&](double DaemonConfig::*m) -> Status {
                          if (n.is_integer()) {
                            c->*m = static_cast<double>(n.as_integer()->get());
                          } else if (n.is_floating_point()) {
                            c->*m = n.as_floating_point()->get();
                          } else {
                            return wrong("a number");
                          }
                          return OkStatus();
                        },
                        [&](std::string DaemonConfig::*m) -> Status {
                          if (!n.is_string()) return wrong("a string");
                          c->*m = n.as_string()->get();
                          return OkStatus();
                        },
                        [&](Addresses DaemonConfig::*m) -> Status {
                          Addresses out;
                          auto add = [&](const toml::node& item) -> Status {
                            if (!item.is_string()) return wrong("an array of strings");
                            auto a = ParseListenAddress(item.as_string()->get());
                            if (!a.ok()) return KeyError(src, item, name, a.status().message());
                            out.push_back(std::move(a).value());
                            return OkStatus();
                          };
                          if (n.is_string()) {
                            RETURN_IF_ERROR(add(n));
                          } else if (const toml::array* arr = n.as_array()) {
                            for (const toml::node& item : *arr) RETURN_IF_ERROR(add(item));
                          } else {
                            return wrong("an array of strings");
                          }
                          c->*m = std::move(out);
                          return OkStatus();
                        },
                    },
                    f.member);
}

// The field `key` of `table` names under its old name, or nullptr.
const OldName* FindOldName(const std::string& table, const std::string& key) {
  for (const OldName& o : kOldNames) {
    if (table == o.table && key == o.old_key) return &o;
  }
  return nullptr;
}

StatusOr<DaemonConfig> ParseTomlUnvalidated(const std::string& text, const std::string& src,
                                            std::vector<std::string>* notices) {
  toml::table root;
  try {
    root = toml::parse(text, src);
  } catch (const toml::parse_error& e) {
    return InvalidArgument(Where(src, e.source()) + ": " + std::string(e.description()));
  } catch (const std::exception& e) {
    return InvalidArgument(src + ": " + e.what());
  }
  DaemonConfig c;
  for (auto&& [table_key, table_node] : root) {
    const std::string table(table_key.str());
    bool known = false;
    for (const char* t : kTables) known = known || table == t;
    if (!known) {
      return KeyError(src, table_node, table,
                      "unknown " + std::string(table_node.is_table() ? "table" : "key") +
                          " (expected [server], [limits] or [workers])");
    }
    const toml::table* entries = table_node.as_table();
    if (entries == nullptr) {
      return KeyError(src, table_node, table,
                      std::string("expected a table, got ") + TypeName(table_node));
    }
    for (auto&& [key_node, value] : *entries) {
      const std::string key(key_node.str());
      const Field* f = FindField(table, key);
      if (const OldName* old = f == nullptr ? FindOldName(table, key) : nullptr) {
        const std::string now = table + "." + old->key;
        if (entries->contains(old->key)) {
          return KeyError(src, value, table + "." + key, "the old name of " + now + ", which is set too; keep one");
        }
        if (notices != nullptr) {
          notices->push_back(Where(src, value.source()) + ": " + table + "." + key + " is now named " + now +
                             "; the old name is still read");
        }
        f = FindField(table, old->key);
      }
      if (f == nullptr) {
        std::string hint;
        for (const Field& other : kFields) {
          if (key == other.key) hint = " (it belongs in [" + std::string(other.table) + "])";
        }
        return KeyError(src, value, table + "." + key, "unknown key" + hint);
      }
      RETURN_IF_ERROR(SetFromToml(&c, *f, value, src));
    }
  }
  return c;
}

// ---- Flags ----

StatusOr<int64_t> ParseFlagInteger(const std::string& flag, const std::string& text) {
  int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || r.ec != std::errc() || r.ptr != text.data() + text.size()) {
    return InvalidArgument(flag + ": '" + text + "' is not an integer");
  }
  return v;
}

Status SetFromFlag(DaemonConfig* c, const Field& f, const std::string& text) {
  const std::string flag = f.flag;
  return std::visit(
      Overloaded{
          [&](int DaemonConfig::*m) -> Status {
            ASSIGN_OR_RETURN(const int64_t v, ParseFlagInteger(flag, text));
            if (v < INT_MIN || v > INT_MAX) {
              return InvalidArgument(flag + ": " + text + " is out of range");
            }
            c->*m = static_cast<int>(v);
            return OkStatus();
          },
          [&](uint64_t DaemonConfig::*m) -> Status {
            ASSIGN_OR_RETURN(const int64_t v, ParseFlagInteger(flag, text));
            if (v < 0) return InvalidArgument(flag + ": " + text + " is negative");
            c->*m = static_cast<uint64_t>(v);
            return OkStatus();
          },
          [&](double DaemonConfig::*m) -> Status {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v)) {
              return InvalidArgument(flag + ": '" + text + "' is not a number");
            }
            c->*m = v;
            return OkStatus();
          },
          [&](std::string DaemonConfig::*m) -> Status {
            c->*m = text;
            return OkStatus();
          },
          [&](auto) -> Status { return Internal(flag + " is not a single-value flag"); },
      },
      f.member);
}

const char* TypeNameForFlag(const Field& f) {
  const std::string key = f.key;
  if (key == "metrics_listen") return "ADDR";
  if (key == "log_level") return "LEVEL";
  if (key == "socket_group") return "GROUP";
  if (key == "workers") return "auto|gpu|cpu";
  if (key.size() > 5 && key.compare(key.size() - 5, 5, "_file") == 0) return "PATH";
  return std::visit(Overloaded{
                        [](int DaemonConfig::*) { return "N"; },
                        [](uint64_t DaemonConfig::*) { return "BYTES"; },
                        [](double DaemonConfig::*) { return "SECONDS"; },
                        [](std::string DaemonConfig::*) { return "TEXT"; },
                        [](auto) { return ""; },
                    },
                    f.member);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

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
    if (RenderValue(a, f) != RenderValue(b, f)) changed.push_back(Name(f));
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
      return InvalidArgument(Name(f) + " = " + FormatNumber(*v) + " is out of range (" + range +
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
  return OkStatus();
}

StatusOr<DaemonConfig> ParseConfigToml(const std::string& text, const std::string& source_name,
                                       std::vector<std::string>* notices) {
  ASSIGN_OR_RETURN(DaemonConfig c, ParseTomlUnvalidated(text, source_name, notices));
  RETURN_IF_ERROR(c.Validate().WithContext(source_name));
  return c;
}

StatusOr<DaemonConfig> LoadConfigFile(const std::string& path, std::vector<std::string>* notices) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!FileExists(path)) return NotFound("config file " + path + " does not exist");
    return FailedPrecondition("cannot read config file " + path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return FailedPrecondition("error reading config file " + path);
  return ParseConfigToml(text.str(), path, notices);
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

StatusOr<CommandLine> ParseCommandLine(int argc, const char* const* argv,
                                       const std::string& default_config_path) {
  CommandLine result;
  CLI::App app("conveyord: the Conveyor GPU video transcode daemon.", "conveyord");
  app.footer(
      "Flags override the config file. Every key of the file, with its default and "
      "comment:\n  conveyord --config \"\" --print-config");
  app.set_version_flag("--version", std::string("conveyord ") + ConveyorVersion());

  std::string config_path;
  CLI::Option* config_opt =
      app.add_option("--config", config_path,
                     std::string("TOML config file (default: ") + default_config_path +
                         " when it exists; \"\" for none)")
          ->type_name("PATH");
  std::vector<std::string> listen;
  CLI::Option* listen_opt = nullptr;
  bool allow_insecure_tcp = false;
  CLI::Option* insecure_opt = nullptr;
  bool print_config = false;
  // One string per single-value flag, converted by SetFromFlag so that a flag and the
  // file key it mirrors accept the same values with the same messages.
  std::vector<std::pair<const Field*, std::string>> values;
  values.reserve(std::size(kFields));
  std::vector<CLI::Option*> options;
  for (const Field& f : kFields) {
    if (f.flag == nullptr) continue;
    const std::string help = FirstSentence(f.doc) + " [" + Name(f) + "]";
    if (std::holds_alternative<Addresses DaemonConfig::*>(f.member)) {
      listen_opt = app.add_option(f.flag, listen, help + " Repeatable; replaces the file's list.")
                       ->type_name("ADDR")
                       ->allow_extra_args(false);
    } else if (std::holds_alternative<bool DaemonConfig::*>(f.member)) {
      insecure_opt = app.add_flag(f.flag, allow_insecure_tcp, help);
    } else {
      values.emplace_back(&f, std::string());
      options.push_back(app.add_option(f.flag, values.back().second, help)
                            ->type_name(TypeNameForFlag(f))
                            ->take_last());
    }
  }
  app.add_flag("--print-config", print_config,
               "Print the resulting configuration as TOML and exit.");
  // The empty group hides it from --help: it is for tests/soak, not for operators.
  std::string test_fault_every;
  CLI::Option* fault_opt =
      app.add_option("--test-fault-every", test_fault_every, "Test only: fail every Nth worker call.")
          ->group("")
          ->take_last();

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    std::ostringstream out, err;
    result.exit_code = app.exit(e, out, err);
    result.exit_now = true;
    result.output = out.str();
    return result;
  } catch (const CLI::ParseError& e) {
    return InvalidArgument(std::string(e.what()) + " (conveyord --help lists the flags)");
  } catch (const std::exception& e) {
    return InvalidArgument(e.what());
  }

  if (config_opt->count() > 0) {
    result.config_path = config_path;
  } else if (FileExists(default_config_path)) {
    result.config_path = default_config_path;
  }
  if (!result.config_path.empty()) {
    ASSIGN_OR_RETURN(result.config, LoadConfigFile(result.config_path, &result.notices));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (options[i]->count() == 0) continue;
    RETURN_IF_ERROR(SetFromFlag(&result.config, *values[i].first, values[i].second));
  }
  if (listen_opt != nullptr && listen_opt->count() > 0) {
    result.config.listen.clear();
    for (const std::string& text : listen) {
      auto a = ParseListenAddress(text);
      if (!a.ok()) return a.status().WithContext("--listen");
      result.config.listen.push_back(std::move(a).value());
    }
  }
  if (insecure_opt != nullptr && insecure_opt->count() > 0) {
    result.config.allow_insecure_tcp = allow_insecure_tcp;
  }
  RETURN_IF_ERROR(result.config.Validate());
  if (fault_opt->count() > 0) {
    const char* allow = std::getenv(kAllowTestHooksEnv);
    if (allow == nullptr || std::string(allow) != "1") {
      return InvalidArgument(std::string("--test-fault-every is a test hook; it needs ") + kAllowTestHooksEnv +
                             "=1 in the environment");
    }
    ASSIGN_OR_RETURN(const int64_t every, ParseFlagInteger("--test-fault-every", test_fault_every));
    if (every < 1 || every > INT_MAX) {
      return InvalidArgument("--test-fault-every: " + test_fault_every + " is out of range (at least 1)");
    }
    result.test_fault_every = static_cast<int>(every);
  }
  if (print_config) {
    result.exit_now = true;
    result.output = RenderConfigToml(result.config);
  }
  return result;
}

}  // namespace conveyor::config
