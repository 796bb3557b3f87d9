// Renders a registry in the Prometheus text exposition format, version 0.0.4: what
// GET /metrics returns and what `promtool check metrics` reads.
#pragma once

#include <string>
#include <vector>

#include "metrics_registry.h"

namespace conveyor::metrics {

// The Content-Type that goes with the text.
inline constexpr char kExpositionContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// Families in name order, children in label-value order, so two scrapes of an idle
// daemon are byte for byte the same. A labelled family with no children yet is left
// out (nothing to say about it), as the official clients do.
std::string RenderText(const std::vector<FamilySnapshot>& families);
inline std::string RenderText(const Registry& registry) { return RenderText(registry.Collect()); }

// A sample value as Prometheus spells it: "NaN", "+Inf", "-Inf", else the shortest text
// that reads back as the same double ("5", "0.25", "1e-05").
std::string FormatValue(double v);

// Escaping rules of the format: help text escapes \ and newline; label values also ".
std::string EscapeHelp(const std::string& text);
std::string EscapeLabelValue(const std::string& value);

}  // namespace conveyor::metrics
