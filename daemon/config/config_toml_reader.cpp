// The TOML reader of conveyord.toml: each key is looked up in the option table
// (config_fields.h) and set with its type checked; errors name the key and where it is.
#include "daemon_config.h"

#include <toml++/toml.h>

#include <climits>
#include <fstream>
#include <sstream>

#include "config_fields.h"

namespace conveyor::config {
namespace {

const char* const kTables[] = {"server", "limits", "workers", "color", "decode"};

// Keys read under an old name. The file's comment and --print-config use the new one.
struct OldName {
  const char* table;
  const char* old_key;
  const char* key;
};
const OldName kOldNames[] = {
    // The old name says input, but JPEGs go out through shared memory too.
    {"server", "shared_memory_input", "shared_memory"},
};

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
  const std::string name = FieldName(f);
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
                          " (expected [server], [limits], [workers], [color] or [decode])");
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

}  // namespace

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

}  // namespace conveyor::config
