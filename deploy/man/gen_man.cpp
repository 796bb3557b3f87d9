// conveyor-gen-man: fills in the man page templates of deploy/man from conveyord's option
// table (daemon/config/config_fields.h), so that conveyord(8) lists every flag and
// conveyord.toml(5) every key with the text, default and range that conveyord itself uses.
//   conveyor-gen-man VERSION TEMPLATE OUT
// A template is roff. In it, @VERSION@ becomes VERSION, and a line that is only
//   @FLAGS@  becomes one .TP entry per flag of the table (its value's name and help, as in
//            conveyord --help);
//   @KEYS@   becomes one .SS section per table of the file and one .TP entry per key, with
//            its default, range, flag and whole comment.
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <variant>

#include "config_fields.h"

namespace conveyor::config {
namespace {

// Text for a roff line: backslashes escaped, option-like hyphens (at the start of a word, or
// doubled) as minus signs, `code` in bold, and a leading control character defused.
std::string Roff(const std::string& text) {
  std::string out;
  bool code = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const char before = i == 0 ? ' ' : text[i - 1];
    if (c == '\\') {
      out += "\\e";
    } else if (c == '`') {
      out += code ? "\\fR" : "\\fB";
      code = !code;
    } else if (c == '-' && (code || before == ' ' || before == '(' || before == '-' || before == '"')) {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (code) out += "\\fR";
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

// Bold, with every hyphen a minus sign: a flag, a key or a value to type as shown.
std::string Literal(const std::string& text) {
  std::string out = "\\fB";
  for (const char c : text) out += c == '-' ? std::string("\\-") : c == '\\' ? std::string("\\e") : std::string(1, c);
  return out + "\\fR";
}

std::string Number(double v) {
  if (v == kMaxBytes) return "2^60";
  if (std::fabs(v) < 9e15 && v == std::floor(v)) return std::to_string(static_cast<long long>(v));
  std::ostringstream s;
  s << v;
  return s.str();
}

// "64 MiB" for a multiple of a binary unit, else "".
std::string HumanBytes(const std::string& value) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  unsigned long long v = 0;
  try {
    v = std::stoull(value);
  } catch (const std::exception&) {
    return "";
  }
  std::string best;
  unsigned long long unit = 1024;
  for (const char* name : kUnits) {
    if (v >= unit && v % unit == 0) best = std::to_string(v / unit) + " " + name;
    unit <<= 10;
  }
  return best;
}

std::string ValueName(const Field& f) {
  if (std::holds_alternative<Addresses DaemonConfig::*>(f.member)) return "ADDR";
  return TypeNameForFlag(f);
}

void Flags(std::ostream& out) {
  for (const Field& f : kFields) {
    if (f.flag == nullptr) continue;
    const std::string value = ValueName(f);
    out << ".TP\n" << Literal(f.flag);
    if (!value.empty()) out << " \\fI" << Roff(value) << "\\fR";
    out << "\n" << Roff(FirstSentence(f.doc)) << "\n";
    if (std::holds_alternative<Addresses DaemonConfig::*>(f.member)) {
      out << "Repeatable; replaces the file's list.\n";
    }
    out << "Sets " << Literal(FieldName(f)) << ".\n";
  }
}

void Keys(std::ostream& out) {
  const DaemonConfig defaults;
  std::string table;
  for (const Field& f : kFields) {
    if (table != f.table) {
      table = f.table;
      out << ".SS [" << table << "]\n";
    }
    const std::string value = RenderValue(defaults, f);
    out << ".TP\n" << Literal(f.key) << " = " << Literal(value) << "\n";
    std::istringstream doc(f.doc);
    for (std::string line; std::getline(doc, line);) out << Roff(line) << "\n";
    std::string facts;
    if (f.min != f.max) {
      facts = f.min_exclusive ? "More than " + Number(f.min) + ", at most " + Number(f.max)
                              : "From " + Number(f.min) + " to " + Number(f.max);
      facts += f.unit == kBytes ? " bytes." : ".";
    }
    if (f.unit == kBytes) {
      const std::string human = HumanBytes(value);
      if (!human.empty()) facts += (facts.empty() ? "" : " ") + std::string("The default is ") + human + ".";
    }
    if (f.flag != nullptr) {
      facts += (facts.empty() ? "" : " ") + std::string("Flag: ") + Literal(f.flag);
      const std::string name = ValueName(f);
      if (!name.empty()) facts += " \\fI" + Roff(name) + "\\fR";
      facts += ".";
    }
    if (!facts.empty()) out << ".IP\n" << facts << "\n";
  }
}

// The first @NAME@ (capitals and underscores) left in `line`, or "".
std::string Placeholder(const std::string& line) {
  for (size_t a = line.find('@'); a != std::string::npos; a = line.find('@', a + 1)) {
    size_t b = a + 1;
    while (b < line.size() && (std::isupper(static_cast<unsigned char>(line[b])) || line[b] == '_')) ++b;
    if (b > a + 1 && b < line.size() && line[b] == '@') return line.substr(a, b - a + 1);
  }
  return "";
}

int Generate(const std::string& version, const std::string& template_path, const std::string& out_path) {
  std::ifstream in(template_path);
  if (!in) {
    std::cerr << "conveyor-gen-man: cannot read " << template_path << "\n";
    return 1;
  }
  std::ostringstream out;
  for (std::string line; std::getline(in, line);) {
    if (line == "@FLAGS@") {
      Flags(out);
      continue;
    }
    if (line == "@KEYS@") {
      Keys(out);
      continue;
    }
    for (size_t at = line.find("@VERSION@"); at != std::string::npos; at = line.find("@VERSION@", at)) {
      line.replace(at, 9, version);
      at += version.size();
    }
    const bool comment = line.rfind(".\\\"", 0) == 0;
    if (const std::string word = Placeholder(line); !word.empty() && !comment) {
      std::cerr << "conveyor-gen-man: " << template_path << ": unknown placeholder " << word << "\n";
      return 1;
    }
    out << line << "\n";
  }
  std::ofstream file(out_path);
  file << out.str();
  if (!file.flush()) {
    std::cerr << "conveyor-gen-man: cannot write " << out_path << "\n";
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace conveyor::config

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: conveyor-gen-man VERSION TEMPLATE OUT\n";
    return 2;
  }
  return conveyor::config::Generate(argv[1], argv[2], argv[3]);
}
