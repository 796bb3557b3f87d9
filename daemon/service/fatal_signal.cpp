// The fatal-signal report (see fatal_signal.h). The handler only calls what is safe in a
// signal handler: write(2), backtrace(3) once its library is loaded (done at install),
// backtrace_symbols_fd(3) and raise(3).
#include "fatal_signal.h"

#include <execinfo.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace conveyor {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
// Room for the handler when the fault is the main thread's stack overflowing.
alignas(16) char g_alt_stack[64 * 1024];

void Write(const char* text) {
  const ssize_t ignored = write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

void WriteNumber(unsigned long v, int base) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v != 0 && n < 24);
  char text[26];
  int k = 0;
  while (n > 0) text[k++] = digits[--n];
  text[k] = '\0';
  Write(text);
}

void OnFatalSignal(int sig, siginfo_t* info, void*) {
  Write("conveyord: fatal signal ");
  WriteNumber(static_cast<unsigned long>(sig), 10);
  Write(" (");
  Write(sigabbrev_np(sig) != nullptr ? sigabbrev_np(sig) : "?");
  Write(") at address 0x");
  WriteNumber(reinterpret_cast<unsigned long>(info != nullptr ? info->si_addr : nullptr), 16);
  Write(", thread ");
  WriteNumber(static_cast<unsigned long>(gettid()), 10);
  Write("; backtrace:\n");
  void* frames[64];
  const int n = backtrace(frames, 64);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  // SA_RESETHAND made the default action current again: the same signal now ends the
  // process as it would have without the report.
  raise(sig);
}

}  // namespace

void ReportFatalSignals() {
  void* warm[1];
  (void)backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
  stack_t alt{};
  alt.ss_sp = g_alt_stack;
  alt.ss_size = sizeof g_alt_stack;
  (void)sigaltstack(&alt, nullptr);
  struct sigaction action {};
  action.sa_sigaction = OnFatalSignal;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (int sig : kFatalSignals) (void)sigaction(sig, &action, nullptr);
}

}  // namespace conveyor
