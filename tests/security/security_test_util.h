// Helpers for the security tests: a throwaway PKI made with the openssl CLI (a CA, a
// server certificate for 127.0.0.1/localhost, a client certificate from that CA and
// one from an untrusted CA), and TLS/token channels.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "conveyor/v1/transcoder.pb.h"
#include "test_files.h"
#include "test_process.h"

namespace conveyor::security_test {

struct Pki {
  std::string dir;
  std::string ca;                       // ca.pem: signs the server and the good client
  std::string server_cert, server_key;  // SAN IP:127.0.0.1, DNS:localhost
  std::string client_cert, client_key;  // signed by ca
  std::string rogue_cert, rogue_key;    // signed by another CA, which the server does not trust
};

// Made once per test binary (EC P-256 keys: fast). Fails the test on an openssl error.
const Pki& TestPki();

// dir/NAME.key and dir/NAME.pem (subject CN=NAME), valid for `days` from now: signed by
// dir/CA.pem and dir/CA.key with the extensions in `ext` ("subjectAltName=...\n"), or a
// self-signed CA when `ca` is empty.
void MakeCert(const std::string& dir, const std::string& name, const std::string& ca, const std::string& ext,
              int days = 2);

// The notAfter of the certificate in `pem_file` as Unix time, as the openssl CLI reads it
// (and date(1) converts it); -1 when that fails.
double NotAfter(const std::string& pem_file);

using conveyor::testing::ReadText;
using conveyor::testing::StderrToFile;
using conveyor::testing::WriteText;

// conveyord's flags for TLS on a TCP port it picks (DaemonProcess::tcp_port()) with the test
// PKI's server pair, and with `mtls` its CA as the client CA.
std::vector<std::string> TlsFlags(bool mtls = false);

using conveyor::testing::WaitUntil;

// A JobSpec for raw 64x48 RGB frames at 25 fps, one rendition at the source size.
v1::JobSpec RawSpec();

struct ChannelOptions {
  std::string ca_file;                // "" → plaintext
  std::string cert_file, key_file;    // client certificate (mTLS)
  std::string token;                  // sent as "authorization: Bearer TOKEN"
};
// A channel to 127.0.0.1:port.
std::shared_ptr<grpc::Channel> TcpChannel(int port, const ChannelOptions& options);

// GetServerStatus with a 5 s deadline: the status code only.
grpc::Status CallStatus(const std::shared_ptr<grpc::Channel>& channel);

}  // namespace conveyor::security_test
