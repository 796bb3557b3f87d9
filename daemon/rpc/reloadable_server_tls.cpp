// Server TLS that SIGHUP can renew (see reloadable_server_tls.h).
#include "reloadable_server_tls.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <thread>

#include <grpcpp/security/tls_credentials_options.h>

namespace conveyor {
namespace {

// The watcher's next read starts at most kRefreshS after a file changes; this covers the
// read itself and a busy host.
constexpr std::chrono::milliseconds kPickUpMargin(300);

// The chain, then the key, in one text: gRPC hands the same text to OpenSSL as the chain
// and as the key, and OpenSSL's PEM readers pass over blocks of the other kind.
std::string IdentityText(const TlsMaterial& m) {
  std::string text = m.cert_chain;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text + m.private_key;
}

Status WriteAll(int fd, const std::string& text, const char* name) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Internal(std::string("writing the memfd ") + name + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return OkStatus();
}

// The watcher opens files by path: /proc must let this process open its own descriptors.
Status CheckOpensByPath(int fd, const std::string& path) {
  UniqueFd again(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat a {}, b {};
  if (!again.valid() || fstat(fd, &a) != 0 || fstat(again.get(), &b) != 0 || a.st_ino != b.st_ino ||
      a.st_dev != b.st_dev) {
    return FailedPrecondition("server TLS: cannot open " + path +
                              " (the TLS key pair is served through /proc/self/fd; is /proc mounted?)");
  }
  return OkStatus();
}

}  // namespace

StatusOr<UniqueFd> ReloadableServerTls::NewVersion(const char* name, const WatchedFile& file, const std::string& text,
                                                   time_t* mtime_s) {
  UniqueFd fd(memfd_create(name, MFD_CLOEXEC));
  if (!fd.valid()) return Internal(std::string("memfd_create(") + name + "): " + std::strerror(errno));
  RETURN_IF_ERROR(WriteAll(fd.get(), text, name));
  // Later than the version before by whole seconds, the watcher's unit: it reads again
  // when the mtime moved during a read, so a pair replaced mid-read is not served.
  *mtime_s = std::max(std::time(nullptr), file.mtime_s + 1);
  const timespec times[2] = {{0, UTIME_OMIT}, {*mtime_s, 0}};
  if (futimens(fd.get(), times) != 0) {
    return Internal(std::string("futimens(memfd ") + name + "): " + std::strerror(errno));
  }
  return fd;
}

Status ReloadableServerTls::Install(WatchedFile* file, UniqueFd version, time_t mtime_s) {
  if (!file->fd.valid()) {
    file->fd = std::move(version);
  } else if (dup3(version.get(), file->fd.get(), O_CLOEXEC) < 0) {
    return Internal("dup3(TLS memfd): " + std::string(std::strerror(errno)));
  }
  file->mtime_s = mtime_s;
  return OkStatus();  // `version`'s own number closes here; the watched number stays
}

StatusOr<ReloadableServerTls::WatchedFile> ReloadableServerTls::CreateFile(const char* name, const std::string& text) {
  WatchedFile file;
  time_t mtime_s = 0;
  ASSIGN_OR_RETURN(UniqueFd version, NewVersion(name, file, text, &mtime_s));
  RETURN_IF_ERROR(Install(&file, std::move(version), mtime_s));
  RETURN_IF_ERROR(CheckOpensByPath(file.fd.get(), file.path()));
  return file;
}

StatusOr<std::unique_ptr<ReloadableServerTls>> ReloadableServerTls::Create(const TlsMaterial& material) {
  std::unique_ptr<ReloadableServerTls> tls(new ReloadableServerTls());
  tls->material_ = material;
  ASSIGN_OR_RETURN(tls->identity_, CreateFile("conveyor-tls-identity", IdentityText(material)));
  const bool mutual = !material.client_ca.empty();
  if (mutual) {
    ASSIGN_OR_RETURN(tls->client_ca_, CreateFile("conveyor-tls-client-ca", material.client_ca));
  }
  const std::string identity = tls->identity_.path();
  // Its constructor reads the files once, so the first handshake already has them.
  tls->provider_ = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      identity, identity, mutual ? tls->client_ca_.path() : "", kRefreshS);
  grpc::experimental::TlsServerCredentialsOptions options(tls->provider_);
  options.watch_identity_key_cert_pairs();
  if (mutual) {
    options.watch_root_certs();
    options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  }
  tls->credentials_ = grpc::experimental::TlsServerCredentials(options);
  if (!tls->credentials_) return Internal("server TLS: gRPC refused the TLS credentials options");
  tls->NoteExpiries();
  return tls;
}

void ReloadableServerTls::NoteExpiries() {
  // LoadTlsMaterial has parsed every certificate already; NaN stands for one that still fails.
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  const StatusOr<std::vector<double>> served = CertificateExpiries(material_.cert_chain);
  server_not_after_s_.store(served.ok() ? served->front() : kNone, std::memory_order_relaxed);
  double ca = kNone;
  if (!material_.client_ca.empty()) {
    const StatusOr<std::vector<double>> cas = CertificateExpiries(material_.client_ca);
    if (cas.ok()) ca = *std::min_element(cas->begin(), cas->end());
  }
  client_ca_not_after_s_.store(ca, std::memory_order_relaxed);
}

StatusOr<std::vector<std::string>> ReloadableServerTls::Replace(const TlsMaterial& material) {
  if (material.client_ca.empty() != material_.client_ca.empty()) {
    return FailedPrecondition("server.tls_client_ca_file: turning mutual TLS on or off needs a restart");
  }
  const bool pair = material.cert_chain != material_.cert_chain || material.private_key != material_.private_key;
  const bool ca = material.client_ca != material_.client_ca;
  std::vector<std::string> changed;
  if (material.cert_chain != material_.cert_chain) changed.push_back("server.tls_cert_file");
  if (material.private_key != material_.private_key) changed.push_back("server.tls_key_file");
  if (ca) changed.push_back("server.tls_client_ca_file");
  if (changed.empty()) return changed;

  // Both new versions are written before either is put in place: an error here leaves
  // the served material as it was.
  UniqueFd identity_version, ca_version;
  time_t identity_mtime = 0, ca_mtime = 0;
  if (pair) {
    ASSIGN_OR_RETURN(identity_version,
                     NewVersion("conveyor-tls-identity", identity_, IdentityText(material), &identity_mtime));
  }
  if (ca) {
    ASSIGN_OR_RETURN(ca_version, NewVersion("conveyor-tls-client-ca", client_ca_, material.client_ca, &ca_mtime));
  }
  if (pair) {
    RETURN_IF_ERROR(Install(&identity_, std::move(identity_version), identity_mtime));
    material_.cert_chain = material.cert_chain;
    material_.private_key = material.private_key;
  }
  if (ca) {
    RETURN_IF_ERROR(Install(&client_ca_, std::move(ca_version), ca_mtime));
    material_.client_ca = material.client_ca;
  }
  NoteExpiries();
  std::this_thread::sleep_for(std::chrono::seconds(kRefreshS) + kPickUpMargin);
  return changed;
}

}  // namespace conveyor
