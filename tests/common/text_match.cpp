// Regular expressions for tests (see text_match.h). GCC 12, building <regex> with
// AddressSanitizer, warns in its own headers that a std::function inside the compiled
// automaton may be used uninitialized (-Wmaybe-uninitialized, a false positive). Every
// std::regex of the tests is compiled here, so that is the one file that needs the warning
// off.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "text_match.h"

#include <regex>
#include <sstream>

namespace conveyor::testing {

std::vector<std::string> LinesMatching(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, re)) found.push_back(line);
  }
  return found;
}

std::string FirstCapture(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  std::smatch m;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_search(line, m, re)) return m[1];
  }
  return "";
}

std::vector<std::vector<std::string>> AllMatches(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  std::vector<std::vector<std::string>> all;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    std::vector<std::string> groups;
    for (size_t i = 1; i < it->size(); ++i) groups.push_back((*it)[i].str());
    all.push_back(std::move(groups));
  }
  return all;
}

}  // namespace conveyor::testing
