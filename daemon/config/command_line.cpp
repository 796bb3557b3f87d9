// conveyord's command line: a flag for each option of the table (config_fields.h) that
// has one, applied over the config file; plus --config, --print-config, --version and
// the hidden test hook.
#include "daemon_config.h"

#include <CLI/CLI.hpp>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "config_fields.h"

namespace conveyor::config {

// The flag's help: the comment's first sentence, its lines joined.
std::string FirstSentence(const char* doc) {
  std::string s(doc);
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  const size_t end = s.find(". ");
  return end == std::string::npos ? s : s.substr(0, end + 1);
}

namespace {

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

}  // namespace

const char* TypeNameForFlag(const Field& f) {
  const std::string key = f.key;
  if (key == "metrics_listen") return "ADDR";
  if (key == "log_level") return "LEVEL";
  if (key == "socket_group") return "GROUP";
  if (key == "workers") return "auto|gpu|cpu";
  if (key == "untagged_matrix") return "bt601|bt709|by-size";
  if (key == "mode") return "auto|gpu|cpu";
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

StatusOr<CommandLine> ParseCommandLine(int argc, const char* const* argv,
                                       const std::string& default_config_path) {
  CommandLine result;
  CLI::App app("conveyord: the Conveyor GPU video transcode daemon.", "conveyord");
  app.footer(
      "Flags override the config file. Every key of the file, with its default and "
      "comment:\n  conveyord --config \"\" --print-config\n\n"
      "Checking the host (GPU, driver, runtime, environment) before serving:\n"
      "  conveyord doctor [--help]\n\n"
      "Reloading a running daemon's config and credentials, waiting for the outcome (the\n"
      "unit's ExecReload):\n"
      "  conveyord reload [--help]");
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
    const std::string help = FirstSentence(f.doc) + " [" + FieldName(f) + "]";
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
