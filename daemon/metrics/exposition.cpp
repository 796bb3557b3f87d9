// Prometheus text exposition format 0.0.4 (see exposition.h).
#include "exposition.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace conveyor::metrics {
namespace {

// {a="x",b="y"} with an optional extra label (a histogram's le) at the end.
void AppendLabels(std::string& out, const std::vector<std::string>& names,
                  const std::vector<std::string>& values, const char* extra_name = nullptr,
                  const std::string& extra_value = std::string()) {
  if (names.empty() && extra_name == nullptr) return;
  out += '{';
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  if (extra_name != nullptr) {
    if (!names.empty()) out += ',';
    out += extra_name;
    out += "=\"";
    out += extra_value;
    out += '"';
  }
  out += '}';
}

void AppendSample(std::string& out, const std::string& name, const FamilySnapshot& f,
                  const ChildSnapshot& c, const std::string& value, const char* extra_name = nullptr,
                  const std::string& extra_value = std::string()) {
  out += name;
  AppendLabels(out, f.label_names, c.label_values, extra_name, extra_value);
  out += ' ';
  out += value;
  out += '\n';
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

std::string EscapeHelp(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderText(const std::vector<FamilySnapshot>& families) {
  std::string out;
  for (const FamilySnapshot& f : families) {
    if (f.children.empty()) continue;
    out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + f.name + " " + MetricTypeName(f.type) + "\n";
    for (const ChildSnapshot& c : f.children) {
      if (f.type != MetricType::kHistogram) {
        AppendSample(out, f.name, f, c, FormatValue(c.value));
        continue;
      }
      for (size_t i = 0; i < c.cumulative.size(); ++i) {
        const std::string le = i < f.bounds.size() ? FormatValue(f.bounds[i]) : "+Inf";
        AppendSample(out, f.name + "_bucket", f, c, std::to_string(c.cumulative[i]), "le", le);
      }
      AppendSample(out, f.name + "_sum", f, c, FormatValue(c.sum));
      const uint64_t count = c.cumulative.empty() ? 0 : c.cumulative.back();
      AppendSample(out, f.name + "_count", f, c, std::to_string(count));
    }
  }
  return out;
}

}  // namespace conveyor::metrics
