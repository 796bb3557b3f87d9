// Reading and checking the server's TLS files (see tls_material.h), with OpenSSL, the
// library gRPC's handshakes use here too.
#include "tls_material.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

namespace conveyor {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

BioPtr ReadBio(const std::string& text) { return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))); }

// A daemon has no terminal to ask for a passphrase: an encrypted key fails to parse.
int NoPassphrase(char*, int, int, void*) { return 0; }

// OpenSSL's reason for the last failure, and the error queue left empty for the next call.
std::string OpensslReason() {
  const unsigned long err = ERR_peek_last_error();
  const char* text = err == 0 ? nullptr : ERR_reason_error_string(err);
  const std::string reason = text == nullptr ? "" : text;
  ERR_clear_error();
  return reason;
}

// A PEM file's text; `marker` ("CERTIFICATE", "PRIVATE KEY") must appear in it, so that a
// wrong file (a certificate given as the key) fails clearly here.
StatusOr<std::string> ReadPem(const std::string& option, const std::string& path, const char* marker) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument(option + ": cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string pem = text.str();
  if (pem.find("-----BEGIN ") == std::string::npos || pem.find(marker) == std::string::npos) {
    return InvalidArgument(option + ": " + path + " is not a PEM file with a " + marker);
  }
  return pem;
}

size_t CountBlocks(const std::string& pem, const std::string& begin) {
  size_t n = 0;
  for (size_t at = pem.find(begin); at != std::string::npos; at = pem.find(begin, at + begin.size())) ++n;
  return n;
}

// Every certificate block of `pem`, parsed, in order: one that does not parse is an
// error rather than a shorter chain.
StatusOr<std::vector<X509Ptr>> ParseCertificates(const std::string& option, const std::string& path,
                                                 const std::string& pem) {
  BioPtr bio = ReadBio(pem);
  if (!bio) return Internal(option + ": out of memory reading " + path);
  std::vector<X509Ptr> certs;
  while (X509* c = PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)) certs.emplace_back(c);
  ERR_clear_error();  // the end of the file reads as an error
  const size_t blocks = CountBlocks(pem, "-----BEGIN CERTIFICATE-----");
  if (certs.empty() || certs.size() != blocks) {
    return InvalidArgument(option + ": " + path + ": a certificate does not parse (" + std::to_string(certs.size()) +
                           " of " + std::to_string(blocks) + " do)");
  }
  return certs;
}

}  // namespace

StatusOr<TlsMaterial> LoadTlsMaterial(const TlsFiles& files) {
  TlsMaterial m;
  ASSIGN_OR_RETURN(m.cert_chain, ReadPem("server.tls_cert_file", files.cert_file, "CERTIFICATE"));
  ASSIGN_OR_RETURN(m.private_key, ReadPem("server.tls_key_file", files.key_file, "PRIVATE KEY"));
  ASSIGN_OR_RETURN(std::vector<X509Ptr> chain, ParseCertificates("server.tls_cert_file", files.cert_file, m.cert_chain));

  BioPtr key_bio = ReadBio(m.private_key);
  if (!key_bio) return Internal("server.tls_key_file: out of memory reading " + files.key_file);
  PkeyPtr key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr));
  if (!key) {
    const std::string reason = OpensslReason();
    return InvalidArgument("server.tls_key_file: " + files.key_file + ": the private key does not parse" +
                           (reason.empty() ? "" : " (" + reason + ")") + "; an encrypted key is not supported");
  }
  // The first certificate is the one served: its public key must be this key's.
  if (X509_check_private_key(chain.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return InvalidArgument("server.tls_key_file: " + files.key_file + " is not the key of the certificate in " +
                           files.cert_file + " (server.tls_cert_file)");
  }

  if (!files.client_ca_file.empty()) {
    ASSIGN_OR_RETURN(m.client_ca, ReadPem("server.tls_client_ca_file", files.client_ca_file, "CERTIFICATE"));
    RETURN_IF_ERROR(
        ParseCertificates("server.tls_client_ca_file", files.client_ca_file, m.client_ca).status());
  }
  return m;
}

StatusOr<std::vector<double>> CertificateExpiries(const std::string& pem) {
  ASSIGN_OR_RETURN(std::vector<X509Ptr> certs, ParseCertificates("TLS", "a certificate's PEM", pem));
  std::vector<double> expiries;
  for (const X509Ptr& cert : certs) {
    std::tm utc{};
    if (ASN1_TIME_to_tm(X509_get0_notAfter(cert.get()), &utc) != 1) {
      ERR_clear_error();
      return InvalidArgument("TLS: a certificate's notAfter does not parse");
    }
    expiries.push_back(static_cast<double>(timegm(&utc)));
  }
  return expiries;
}

std::string DescribeCertificate(const std::string& pem) {
  BioPtr bio = ReadBio(pem);
  if (!bio) return "";
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
  ERR_clear_error();
  if (!cert) return "";
  BioPtr out(BIO_new(BIO_s_mem()));
  if (!out) return "";
  BIO_puts(out.get(), "subject ");
  X509_NAME_print_ex(out.get(), X509_get_subject_name(cert.get()), 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
  BIO_puts(out.get(), ", issuer ");
  X509_NAME_print_ex(out.get(), X509_get_issuer_name(cert.get()), 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
  BIO_puts(out.get(), ", serial ");
  i2a_ASN1_INTEGER(out.get(), X509_get0_serialNumber(cert.get()));
  BIO_puts(out.get(), ", valid until ");
  ASN1_TIME_print(out.get(), X509_get0_notAfter(cert.get()));
  char* data = nullptr;
  const long n = BIO_get_mem_data(out.get(), &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : "";
}

}  // namespace conveyor
