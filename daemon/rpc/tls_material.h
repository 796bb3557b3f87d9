// The PEM files behind server TLS (server.tls_cert_file, server.tls_key_file and
// server.tls_client_ca_file), read and checked the same way at startup and on every
// reload: each parses, and the key belongs to the certificate, so that a wrong file is
// refused here, naming the option, before any handshake could use it.
#pragma once

#include <string>
#include <vector>

#include "status.h"

namespace conveyor {

struct TlsFiles {
  std::string cert_file;       // server.tls_cert_file: the certificate, then its chain
  std::string key_file;        // server.tls_key_file
  std::string client_ca_file;  // server.tls_client_ca_file; "" without mutual TLS
};

struct TlsMaterial {
  std::string cert_chain;   // PEM, the server's certificate first
  std::string private_key;  // PEM, unencrypted
  std::string client_ca;    // PEM; "" without mutual TLS

  bool operator==(const TlsMaterial& o) const {
    return cert_chain == o.cert_chain && private_key == o.private_key && client_ca == o.client_ca;
  }
};

// Reads the files and checks them: every certificate block parses, the key parses and is
// the key of the first certificate, and a client CA file holds certificates that parse.
// INVALID_ARGUMENT names the option and the file.
StatusOr<TlsMaterial> LoadTlsMaterial(const TlsFiles& files);

// The notAfter of each certificate of `pem`, in order, as Unix time. INVALID_ARGUMENT when
// a certificate or its date does not parse, or there is none.
StatusOr<std::vector<double>> CertificateExpiries(const std::string& pem);

// The first certificate of `pem` for the log: "subject CN=a, issuer CN=b, serial 1F,
// valid until Jan  2 10:00:00 2027 GMT"; "" when none parses.
std::string DescribeCertificate(const std::string& pem);

}  // namespace conveyor
