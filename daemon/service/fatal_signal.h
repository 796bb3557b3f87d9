// A crash report: on a fatal signal (a segmentation fault, a bus error, an abort) the
// daemon writes the signal and its threads' caller addresses to stderr (the journal),
// then dies of the same signal, so systemd restarts it and a core dump is made where
// the host keeps them. The addresses symbolize against the unstripped binary
// (addr2line -f -C -e conveyord OFFSET).
#pragma once

namespace conveyor {

// Installs the handlers; call once, early in main, before threads start.
void ReportFatalSignals();

}  // namespace conveyor
