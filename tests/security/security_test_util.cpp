// The security tests' helpers (see security_test_util.h).
#include "security_test_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "daemon_process.h"

namespace conveyor::security_test {

void MakeCert(const std::string& dir, const std::string& name, const std::string& ca, const std::string& ext,
              int days) {
  const std::string valid = " -days " + std::to_string(days) + " ";
  const std::string key = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + dir + "/" + name +
                          ".key ";
  std::string cmd;
  if (ca.empty()) {
    cmd = "openssl req -x509" + key + "-out " + dir + "/" + name + ".pem" + valid + "-subj /CN=" + name +
          " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign";
  } else {
    WriteText(dir + "/" + name + ".ext", ext);
    cmd = "openssl req" + key + "-out " + dir + "/" + name + ".csr -subj /CN=" + name + " && openssl x509 -req -in " +
          dir + "/" + name + ".csr -CA " + dir + "/" + ca + ".pem -CAkey " + dir + "/" + ca +
          ".key -CAcreateserial" + valid + "-out " + dir + "/" + name + ".pem -extfile " + dir + "/" + name + ".ext";
  }
  ASSERT_EQ(e2e::Shell("(" + cmd + ") >" + dir + "/openssl.log 2>&1"), 0) << ReadText(dir + "/openssl.log");
}

double NotAfter(const std::string& pem_file) {
  const std::string out = pem_file + ".not-after";
  const std::string cmd = "date -u -d \"$(openssl x509 -noout -enddate -in '" + pem_file +
                          "' | cut -d= -f2)\" +%s >'" + out + "' 2>&1";
  if (e2e::Shell(cmd) != 0) return -1;
  const std::string text = ReadText(out);
  return text.empty() ? -1 : std::strtod(text.c_str(), nullptr);
}

namespace {

Pki MakePki() {
  Pki p;
  p.dir = e2e::MakeTempDir();
  MakeCert(p.dir, "ca", "", "");
  MakeCert(p.dir, "server", "ca",
           "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  MakeCert(p.dir, "client", "ca", "extendedKeyUsage=clientAuth\n");
  MakeCert(p.dir, "rogue-ca", "", "");
  MakeCert(p.dir, "rogue", "rogue-ca", "extendedKeyUsage=clientAuth\n");
  p.ca = p.dir + "/ca.pem";
  p.server_cert = p.dir + "/server.pem";
  p.server_key = p.dir + "/server.key";
  p.client_cert = p.dir + "/client.pem";
  p.client_key = p.dir + "/client.key";
  p.rogue_cert = p.dir + "/rogue.pem";
  p.rogue_key = p.dir + "/rogue.key";
  return p;
}

}  // namespace

const Pki& TestPki() {
  static const Pki pki = MakePki();
  return pki;
}


std::vector<std::string> TlsFlags(bool mtls) {
  const Pki& p = TestPki();
  std::vector<std::string> f = {"--listen", "127.0.0.1:0", "--tls-cert-file", p.server_cert, "--tls-key-file",
                                p.server_key};
  if (mtls) {
    f.push_back("--tls-client-ca-file");
    f.push_back(p.ca);
  }
  return f;
}

v1::JobSpec RawSpec() {
  v1::JobSpec spec;
  v1::RawInput* raw = spec.mutable_raw();
  raw->set_pixel_format(v1::PIXEL_FORMAT_RGB24);
  raw->set_width(64);
  raw->set_height(48);
  raw->mutable_frame_rate()->set_num(25);
  raw->mutable_frame_rate()->set_den(1);
  raw->set_color_matrix(v1::COLOR_MATRIX_BT709);
  spec.add_renditions()->set_quality(85);
  return spec;
}

std::shared_ptr<grpc::Channel> TcpChannel(int port, const ChannelOptions& o) {
  const std::string target = "127.0.0.1:" + std::to_string(port);
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (o.ca_file.empty()) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadText(o.ca_file);
    if (!o.cert_file.empty()) {
      ssl.pem_cert_chain = ReadText(o.cert_file);
      ssl.pem_private_key = ReadText(o.key_file);
    }
    creds = grpc::SslCredentials(ssl);
    // gRPC sends call credentials on secure channels only; the token tests use TLS.
    if (!o.token.empty()) creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(o.token));
  }
  return grpc::CreateChannel(target, creds);
}

grpc::Status CallStatus(const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::Transcoder::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ServerStatus reply;
  return stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &reply);
}

}  // namespace conveyor::security_test
