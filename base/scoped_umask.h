// Sets the process's file mode creation mask for a scope and puts the previous one back.
// A unix socket takes its mode from the mask when it is bound, so binding inside a
// ScopedUmask gives it the right mode from its first moment: a chmod after bind leaves a
// window in which a client that should be refused may connect.
//
// The mask is the process's, not the thread's: hold one only while nothing else in the
// process creates files (the daemon binds its sockets at start, before it serves).
#pragma once

#include <sys/stat.h>

namespace conveyor {

class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : previous_(umask(mask)) {}
  ~ScopedUmask() { umask(previous_); }
  ScopedUmask(const ScopedUmask&) = delete;
  ScopedUmask& operator=(const ScopedUmask&) = delete;

 private:
  mode_t previous_;
};

// The mask under which a socket is bound with mode 0660: its owner and group may connect.
inline constexpr mode_t kOwnerAndGroupSocketMask = 0117;

}  // namespace conveyor
