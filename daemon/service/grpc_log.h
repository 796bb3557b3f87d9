// gRPC's own log lines (gpr_log: failed TLS handshakes, bad frames from a peer, its
// internal errors), sent to the daemon's log in its format instead of gRPC's bare lines
// on stderr. In a server, gRPC's ERROR lines are mostly what peers cause (a client that
// speaks plaintext to a TLS port, a certificate the client CA did not sign), so they
// come out as warnings, like the daemon's own lines about a client; INFO and DEBUG keep
// their level. Which of them gRPC passes on is still its choice: GRPC_VERBOSITY, ERROR
// unless set.
#pragma once

namespace conveyor {

// Installs the gpr log function for the whole process; call once, early at start-up,
// after the log is set up.
void RouteGrpcLogToDaemonLog();

}  // namespace conveyor
