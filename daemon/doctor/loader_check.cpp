// `ldconfig -p` parsing and the duplicate-runtime verdict (see loader_check.h).
#include "loader_check.h"

#include <sys/wait.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>

namespace conveyor::doctor {

namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

struct PcloseDeleter {
  void operator()(FILE* f) const { (void)pclose(f); }
};

}  // namespace

std::vector<LdconfigEntry> ParseLdconfig(const std::string& text) {
  std::vector<LdconfigEntry> entries;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t arrow = line.find(" => ");
    const size_t open = line.find(" (");
    if (arrow == std::string::npos || open == std::string::npos || open > arrow) continue;
    const size_t close = line.rfind(')', arrow);
    if (close == std::string::npos || close < open) continue;
    LdconfigEntry e;
    e.soname = Trim(line.substr(0, open));
    std::string abi = line.substr(open + 2, close - open - 2);
    // "libc6,x86-64, hwcap: 0x..., OS ABI: Linux 3.2.0": the ABI is the part before notes.
    const size_t note = abi.find(", ");
    if (note != std::string::npos) abi = abi.substr(0, note);
    e.abi = Trim(abi);
    e.path = Trim(line.substr(arrow + 4));
    if (e.soname.empty() || e.path.empty()) continue;
    entries.push_back(std::move(e));
  }
  return entries;
}

bool SonameIsLibrary(const std::string& soname, const std::string& library) {
  const std::string base = library + ".so";
  if (soname == base) return true;
  return soname.size() > base.size() + 1 && soname.compare(0, base.size() + 1, base + ".") == 0;
}

std::vector<LibraryCopies> FindLibraryCopies(const std::vector<LdconfigEntry>& entries,
                                             const std::string& library, const PathResolver& resolve) {
  std::vector<LibraryCopies> per_abi;
  for (const LdconfigEntry& e : entries) {
    if (!SonameIsLibrary(e.soname, library)) continue;
    LibraryCopies* group = nullptr;
    for (LibraryCopies& g : per_abi) {
      if (g.abi == e.abi) group = &g;
    }
    if (group == nullptr) {
      per_abi.push_back(LibraryCopies{e.abi, {}, {}});
      group = &per_abi.back();
    }
    group->paths.push_back(e.path);
    const std::string file = resolve ? resolve(e.path) : e.path;
    bool seen = false;
    for (const std::string& f : group->files) seen = seen || f == file;
    if (!seen) group->files.push_back(file);
  }
  return per_abi;
}

CheckResult CheckLibraryCopies(const std::string& ldconfig_text, const std::string& library,
                               const PathResolver& resolve, Verdict when_missing,
                               const std::string& missing_note) {
  CheckResult r;
  r.name = "loader " + library;
  const std::vector<LibraryCopies> copies = FindLibraryCopies(ParseLdconfig(ldconfig_text), library, resolve);
  if (copies.empty()) {
    r.verdict = when_missing;
    r.detail = "not on the loader path (ldconfig -p lists no " + library + ".so*)";
    if (!missing_note.empty()) r.detail += "; " + missing_note;
    r.metrics.emplace_back("copies", 0);
    return r;
  }
  size_t most = 0;
  std::string detail;
  for (const LibraryCopies& g : copies) {
    most = std::max(most, g.files.size());
    if (!detail.empty()) detail += "; ";
    detail += std::to_string(g.files.size()) + (g.files.size() == 1 ? " copy" : " copies") + " (" + g.abi + "): ";
    for (size_t i = 0; i < g.files.size(); ++i) detail += (i > 0 ? ", " : "") + g.files[i];
  }
  r.metrics.emplace_back("copies", static_cast<double>(most));
  if (most > 1) {
    r.verdict = Verdict::kWarn;
    r.detail = detail + " -- more than one copy: the loader may mix them; keep one (ldconfig -p | grep " +
               library + ")";
  } else {
    r.verdict = Verdict::kOk;
    r.detail = detail;
  }
  return r;
}

StatusOr<std::string> RunLdconfig() {
  static const char* kCommands[] = {"/sbin/ldconfig -p 2>/dev/null", "/usr/sbin/ldconfig -p 2>/dev/null",
                                    "ldconfig -p 2>/dev/null"};
  std::string last_error = "no ldconfig found";
  for (const char* cmd : kCommands) {
    std::unique_ptr<FILE, PcloseDeleter> pipe(popen(cmd, "r"));
    if (!pipe) {
      last_error = std::string("popen(") + cmd + ") failed";
      continue;
    }
    std::string text;
    char buf[4096];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof(buf), pipe.get())) > 0) text.append(buf, n);
    const int status = pclose(pipe.release());
    if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !text.empty()) return text;
    last_error = std::string(cmd) + " exited with status " +
                 std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return Unavailable("ldconfig -p: " + last_error);
}

std::string ResolveRealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) return path;
  return buf;
}

}  // namespace conveyor::doctor
