// Regular expressions (ECMAScript, std::regex) over the text tests read: logs, status
// lines. Kept in one translation unit, text_match.cpp, which says why.
#pragma once

#include <string>
#include <vector>

namespace conveyor::testing {

// The lines of `text` in which `pattern` matches; each line is searched on its own, so ^
// and $ are its ends.
std::vector<std::string> LinesMatching(const std::string& text, const std::string& pattern);

// Group 1 of `pattern` in the first line of `text` it matches, or "".
std::string FirstCapture(const std::string& text, const std::string& pattern);

// The groups (1, 2, ...) of every match of `pattern` in the whole of `text`, in order.
std::vector<std::vector<std::string>> AllMatches(const std::string& text, const std::string& pattern);

}  // namespace conveyor::testing
