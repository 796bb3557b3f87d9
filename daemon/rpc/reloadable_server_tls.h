// Server TLS credentials whose key pair and client CA can be replaced while the server
// runs. gRPC 1.51 lets a running server change its TLS material only through a
// certificate provider, and its public API has one that changes: the file watcher. So
// the watcher here reads two in-memory files of this process (memfds, opened as
// /proc/self/fd/N) that only Replace() writes: nothing reaches a handshake before
// LoadTlsMaterial has checked it, and the operator's files are read when the daemon
// starts and on SIGHUP, not whenever they happen to change.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/security/server_credentials.h>
#include <grpcpp/security/tls_certificate_provider.h>

#include "status.h"
#include "tls_material.h"
#include "unique_fd.h"

namespace conveyor {

class ReloadableServerTls {
 public:
  // How often gRPC's watcher reads the in-memory files: the longest a replaced key pair
  // waits before new handshakes use it (its minimum: it counts whole seconds).
  static constexpr unsigned kRefreshS = 1;

  // Serves `material` (from LoadTlsMaterial); with a client CA, clients must present a
  // certificate that it signed.
  static StatusOr<std::unique_ptr<ReloadableServerTls>> Create(const TlsMaterial& material);
  // Must outlive the gRPC server that uses credentials(): gRPC's watcher reads the files
  // by their descriptor numbers.
  ~ReloadableServerTls() = default;
  ReloadableServerTls(const ReloadableServerTls&) = delete;
  ReloadableServerTls& operator=(const ReloadableServerTls&) = delete;

  // For every TLS listener.
  const std::shared_ptr<grpc::ServerCredentials>& credentials() const { return credentials_; }
  const TlsMaterial& material() const { return material_; }
  // The notAfter (Unix time) of the certificate served, the chain's first, and the
  // earliest of the client CA's certificates (NaN without mutual TLS): the first of them to
  // pass ends the clients' access. As of the last Create or Replace; read from any thread
  // (a metrics scrape).
  double server_not_after_s() const { return server_not_after_s_.load(std::memory_order_relaxed); }
  double client_ca_not_after_s() const { return client_ca_not_after_s_.load(std::memory_order_relaxed); }

  // Hands `material` (checked by LoadTlsMaterial) to the watcher and returns once its next
  // read is due (kRefreshS and a margin), so that handshakes from then on use it;
  // connections already made keep what they were made with. The settings whose files
  // changed: server.tls_cert_file and server.tls_key_file for the pair,
  // server.tls_client_ca_file for the CA; none, and no wait, when nothing changed. A
  // client CA cannot be added or removed here: that changes what the listener asks of
  // clients, which needs a restart.
  StatusOr<std::vector<std::string>> Replace(const TlsMaterial& material);

 private:
  // One in-memory file at a fixed descriptor number. Each version is a new memfd put in
  // place with one dup3(), so that the watcher opens either the old text or the new one,
  // never a mix; its mtime, which the watcher compares before and after its reads, moves
  // on by at least a second each time.
  struct WatchedFile {
    UniqueFd fd;
    time_t mtime_s = 0;
    std::string path() const { return "/proc/self/fd/" + std::to_string(fd.get()); }
  };
  ReloadableServerTls() = default;
  static StatusOr<WatchedFile> CreateFile(const char* name, const std::string& text);
  // The new version of `file`, written and dated; Install() puts it in place.
  static StatusOr<UniqueFd> NewVersion(const char* name, const WatchedFile& file, const std::string& text,
                                       time_t* mtime_s);
  static Status Install(WatchedFile* file, UniqueFd version, time_t mtime_s);
  // The expiries of material_.
  void NoteExpiries();

  TlsMaterial material_;
  std::atomic<double> server_not_after_s_{std::numeric_limits<double>::quiet_NaN()};
  std::atomic<double> client_ca_not_after_s_{std::numeric_limits<double>::quiet_NaN()};
  WatchedFile identity_;   // the certificate chain, then the key: one file, so a pair is read whole
  WatchedFile client_ca_;  // absent without mutual TLS
  std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> provider_;
  std::shared_ptr<grpc::ServerCredentials> credentials_;
};

}  // namespace conveyor
