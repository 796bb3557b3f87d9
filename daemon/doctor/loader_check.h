// The `ldconfig -p | grep hsa` check: more than one copy of a GPU runtime library
// on the loader path makes the runtime and its plugins disagree. The
// parser and the verdict are pure; only RunLdconfig() touches the system.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "doctor_report.h"
#include "status.h"

namespace conveyor::doctor {

struct LdconfigEntry {
  std::string soname;  // "libhsa-runtime64.so.1"
  std::string abi;     // "libc6,x86-64" (hwcap and OS ABI notes dropped)
  std::string path;    // "/lib/x86_64-linux-gnu/libhsa-runtime64.so.1"
};

// Parses `ldconfig -p` output; skips the "N libs found in cache" header and any line
// that is not "<soname> (<abi>...) => <path>".
std::vector<LdconfigEntry> ParseLdconfig(const std::string& text);

// True when `soname` is `library`.so or `library`.so.<anything> ("libhsa-runtime64").
bool SonameIsLibrary(const std::string& soname, const std::string& library);

// Maps an entry's path to the file it ends at (symlinks resolved), so that the .so and
// .so.1 links to one file count once. Tests pass a table; the doctor passes realpath().
using PathResolver = std::function<std::string(const std::string&)>;

struct LibraryCopies {
  std::string abi;
  std::vector<std::string> files;  // distinct resolved files, in ldconfig order
  std::vector<std::string> paths;  // the entries' own paths, in ldconfig order
};

// The copies of `library` per ABI, in ldconfig order.
std::vector<LibraryCopies> FindLibraryCopies(const std::vector<LdconfigEntry>& entries,
                                             const std::string& library, const PathResolver& resolve);

// ok: one copy per ABI; warn: more than one; `when_missing` when there is none.
CheckResult CheckLibraryCopies(const std::string& ldconfig_text, const std::string& library,
                               const PathResolver& resolve, Verdict when_missing,
                               const std::string& missing_note);

// `ldconfig -p` output (tries /sbin, /usr/sbin, then PATH).
StatusOr<std::string> RunLdconfig();

// realpath(3), or the path itself when it cannot be resolved.
std::string ResolveRealPath(const std::string& path);

}  // namespace conveyor::doctor
