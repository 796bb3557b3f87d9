// Rotating credentials without a restart, end to end with the real conveyord: SIGHUP reads
// the token file, the TLS key pair and the client CA again. A removed token is refused and
// a new one works; new connections get the renewed certificate, and are judged by the
// renewed client CA; streams started before the reload finish on what they started with;
// a token file or key pair that does not check out is refused and the old one stays.
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "daemon_process.h"
#include "metrics_scrape.h"
#include "security_test_util.h"
#include "synthetic_frame.h"
#include "transcode_client.h"

namespace conveyor::security_test {
namespace {

using e2e::DaemonProcess;
using e2e::Shell;
using e2e::TranscodeOutcome;
using e2e::TranscodeStream;

// Two generations of server certificates from two CAs (SAN 127.0.0.1), and client
// certificates from two client CAs: dir/NAME.pem and dir/NAME.key.
struct RotationPki {
  std::string dir;
  std::string file(const std::string& name, const char* ext) const { return dir + "/" + name + ext; }
};

const RotationPki& Pki2() {
  static const RotationPki pki = [] {
    RotationPki p;
    p.dir = e2e::MakeTempDir();
    const std::string server_ext = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n";
    MakeCert(p.dir, "ca-one", "", "");
    MakeCert(p.dir, "conveyord-one", "ca-one", server_ext);
    MakeCert(p.dir, "conveyord-one-renewed", "ca-one", server_ext, /*days=*/30);
    MakeCert(p.dir, "ca-two", "", "");
    MakeCert(p.dir, "conveyord-two", "ca-two", server_ext);
    MakeCert(p.dir, "client-ca-one", "", "");
    MakeCert(p.dir, "client-one", "client-ca-one", "extendedKeyUsage=clientAuth\n");
    MakeCert(p.dir, "client-ca-two", "", "");
    MakeCert(p.dir, "client-ca-long", "", "", /*days=*/30);
    MakeCert(p.dir, "client-two", "client-ca-two", "extendedKeyUsage=clientAuth\n");
    WriteText(p.dir + "/both-cas.pem", ReadText(p.dir + "/ca-one.pem") + ReadText(p.dir + "/ca-two.pem"));
    return p;
  }();
  return pki;
}

bool LogHas(const std::string& log, const std::string& text) { return ReadText(log).find(text) != std::string::npos; }

// A channel with its own subchannel pool: its first call makes a new connection and a new
// handshake, never one shared with an earlier channel.
std::shared_ptr<grpc::Channel> NewConnection(int port, const std::string& ca_file, const std::string& cert = "",
                                             const std::string& key = "", const std::string& token = "") {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ReadText(ca_file);
  if (!cert.empty()) {
    ssl.pem_cert_chain = ReadText(cert);
    ssl.pem_private_key = ReadText(key);
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(ssl);
  if (!token.empty()) creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(token));
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), creds, args);
}

// The subject of the certificate a new connection is served (from the client's auth
// context), or "failed: ..." when the call fails.
std::string ServedSubject(int port, const std::string& ca_file) {
  auto stub = v1::Transcoder::NewStub(NewConnection(port, ca_file));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ServerStatus reply;
  const grpc::Status st = stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &reply);
  if (!st.ok()) return "failed: " + st.error_message();
  const std::shared_ptr<const grpc::AuthContext> auth = ctx.auth_context();
  if (!auth) return "no auth context";
  for (const grpc::string_ref& v : auth->FindPropertyValues("x509_subject")) return std::string(v.data(), v.size());
  return "no subject";
}

// A Transcode stream of 64x48 RGB frames on `channel`: one frame at once, then it holds
// until Finish(), which sends a second and half-closes. started() once the first JPEG
// came back: the stream has passed every check of its start.
class HeldStream {
 public:
  explicit HeldStream(std::shared_ptr<grpc::Channel> channel) : stub_(v1::Transcoder::NewStub(std::move(channel))) {
    auto frame = std::make_shared<testing::SyntheticFrame>(testing::MakeSyntheticFrame(64, 48, PixelFormat::kRgb24, 7));
    call_.spec = RawSpec();  // 64x48 RGB at 25 fps, one rendition at the source size
    call_.deadline_s = 30;
    call_.send_input = [this, frame](TranscodeStream* s) {
      if (!e2e::SendRawFrame(s, frame->bytes, 0)) return false;
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return finish_; });
      lock.unlock();
      return e2e::SendRawFrame(s, frame->bytes, 1);
    };
    call_.on_response = [this](const v1::TranscodeResponse& r, grpc::ClientContext*) {
      if (!r.has_packet()) return;
      std::lock_guard<std::mutex> lock(mu_);
      output_ = true;
      cv_.notify_all();
    };
    thread_ = std::thread([this] { outcome_ = RunTranscode(stub_.get(), call_); });
  }
  ~HeldStream() { Finish(); }

  bool WaitStarted(double timeout_s) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return output_; });
  }
  const TranscodeOutcome& Finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      finish_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return outcome_;
  }

 private:
  std::unique_ptr<v1::Transcoder::Stub> stub_;
  e2e::TranscodeCall call_;
  TranscodeOutcome outcome_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool finish_ = false, output_ = false;
  std::thread thread_;
};

size_t Frames(const TranscodeOutcome& out) { return out.frames.count(0) ? out.frames.at(0).size() : 0; }

// A daemon on TLS (its files in dir_, copies the test replaces) with its log in dir_/log.
class CredentialReload : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = e2e::MakeTempDir(); }
  void TearDown() override {
    daemon_.reset();
    Shell("rm -rf '" + dir_ + "'");
  }
  // Serves `name`'s certificate and key from dir_/served.pem and dir_/served.key.
  void Serve(const std::string& name, const std::string& key_of = "") {
    WriteText(dir_ + "/served.pem", ReadText(Pki2().file(name, ".pem")));
    WriteText(dir_ + "/served.key", ReadText(Pki2().file(key_of.empty() ? name : key_of, ".key")));
  }
  void Start(std::vector<std::string> extra) {
    std::vector<std::string> flags = {"--listen",      "127.0.0.1:0",           "--tls-cert-file",
                                      dir_ + "/served.pem", "--tls-key-file", dir_ + "/served.key",
                                      "--log-level",   "info"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    StderrToFile capture(log_path());
    daemon_ = std::make_unique<DaemonProcess>(flags);
    ASSERT_TRUE(daemon_->ready()) << ReadText(log_path());
    port_ = daemon_->tcp_port();
    ASSERT_GT(port_, 0);
  }
  std::string log_path() const { return dir_ + "/log"; }
  // SIGHUP, then waits for the reload's line in the log (the n-th "SIGHUP: reloading" is
  // there, and the reload after it has ended: applied, nothing to change, or refused).
  void Reload() {
    const size_t before = Count("SIGHUP: reloading");
    ASSERT_EQ(kill(daemon_->pid(), SIGHUP), 0);
    ASSERT_TRUE(WaitUntil(
        [&] {
          return Count("SIGHUP: reloading") > before &&
                 Count("reload: applied") + Count("reload: nothing to change") + Count("reload refused") > reloads_;
        },
        15))
        << ReadText(log_path());
    ++reloads_;
  }
  size_t Count(const std::string& text) const {
    const std::string log = ReadText(log_path());
    size_t n = 0;
    for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
    return n;
  }

  std::string dir_;
  int port_ = 0;
  size_t reloads_ = 0;
  std::unique_ptr<DaemonProcess> daemon_;
};

grpc::Status StatusAs(int port, const std::string& token) {
  return CallStatus(NewConnection(port, TestPki().ca, "", "", token));
}

TEST_F(CredentialReload, ATokenRemovedFromTheFileIsRefusedAndANewOneWorksWhileAStreamGoesOn) {
  // The test PKI's server pair, so that TestPki().ca is the CA to trust.
  WriteText(dir_ + "/served.pem", ReadText(TestPki().server_cert));
  WriteText(dir_ + "/served.key", ReadText(TestPki().server_key));
  WriteText(dir_ + "/tokens", "token-a\n");
  Start({"--auth-token-file", dir_ + "/tokens"});
  ASSERT_TRUE(StatusAs(port_, "token-a").ok());
  ASSERT_EQ(StatusAs(port_, "token-b").error_code(), grpc::StatusCode::UNAUTHENTICATED);

  HeldStream held(NewConnection(port_, TestPki().ca, "", "", "token-a"));
  ASSERT_TRUE(held.WaitStarted(15)) << ReadText(log_path());

  WriteText(dir_ + "/tokens", "token-b\n");
  Reload();
  const grpc::Status a = StatusAs(port_, "token-a");
  EXPECT_EQ(a.error_code(), grpc::StatusCode::UNAUTHENTICATED) << a.error_message();
  const grpc::Status b = StatusAs(port_, "token-b");
  EXPECT_TRUE(b.ok()) << b.error_message();
  EXPECT_FALSE(LogHas(log_path(), "reload: nothing to change")) << ReadText(log_path());
  EXPECT_TRUE(LogHas(log_path(), "server.auth_token_file")) << ReadText(log_path());

  // The stream that token-a started before the reload runs to its end.
  const TranscodeOutcome& out = held.Finish();
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(Frames(out), 2u);
}

TEST_F(CredentialReload, AnUnreadableOrInvalidTokenFileIsRefusedAndTheTokensStay) {
  WriteText(dir_ + "/served.pem", ReadText(TestPki().server_cert));
  WriteText(dir_ + "/served.key", ReadText(TestPki().server_key));
  WriteText(dir_ + "/tokens", "token-a\n");
  Start({"--auth-token-file", dir_ + "/tokens"});

  const std::vector<std::string> bad = {"token-c two words\n", "# no token at all\n"};
  for (const std::string& text : bad) {
    WriteText(dir_ + "/tokens", text);
    Reload();
    EXPECT_EQ(Count("reload refused"), reloads_) << ReadText(log_path());
    EXPECT_TRUE(StatusAs(port_, "token-a").ok()) << text;
    EXPECT_EQ(StatusAs(port_, "token-c").error_code(), grpc::StatusCode::UNAUTHENTICATED) << text;
  }
  ASSERT_EQ(Shell("rm '" + dir_ + "/tokens'"), 0);
  Reload();
  EXPECT_EQ(Count("reload refused"), reloads_) << ReadText(log_path());
  EXPECT_TRUE(LogHas(log_path(), "server.auth_token_file: cannot read")) << ReadText(log_path());
  EXPECT_TRUE(StatusAs(port_, "token-a").ok());
}

TEST_F(CredentialReload, ANewConnectionGetsTheRenewedCertificateWhileAStreamOnTheOldOneCompletes) {
  Serve("conveyord-one");
  Start({});
  const std::string both = Pki2().dir + "/both-cas.pem";
  EXPECT_NE(ServedSubject(port_, both).find("conveyord-one"), std::string::npos) << ServedSubject(port_, both);
  // The control: a client that trusts only the second CA is refused before the renewal.
  EXPECT_EQ(CallStatus(NewConnection(port_, Pki2().file("ca-two", ".pem"))).error_code(),
            grpc::StatusCode::UNAVAILABLE);

  // Trusts only the first CA, so it can go on only on the connection it has.
  HeldStream held(NewConnection(port_, Pki2().file("ca-one", ".pem")));
  ASSERT_TRUE(held.WaitStarted(15)) << ReadText(log_path());

  Serve("conveyord-two");
  Reload();
  EXPECT_EQ(Count("reload refused"), 0u) << ReadText(log_path());
  const std::string subject = ServedSubject(port_, both);
  EXPECT_NE(subject.find("conveyord-two"), std::string::npos) << subject << "\n" << ReadText(log_path());
  const grpc::Status two = CallStatus(NewConnection(port_, Pki2().file("ca-two", ".pem")));
  EXPECT_TRUE(two.ok()) << two.error_message();
  const grpc::Status one = CallStatus(NewConnection(port_, Pki2().file("ca-one", ".pem")));
  EXPECT_EQ(one.error_code(), grpc::StatusCode::UNAVAILABLE) << one.error_message();

  const TranscodeOutcome& out = held.Finish();
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(Frames(out), 2u);
}

TEST_F(CredentialReload, ARenewedClientCaDecidesWhichClientsANewConnectionServes) {
  Serve("conveyord-one");
  WriteText(dir_ + "/client-ca.pem", ReadText(Pki2().file("client-ca-one", ".pem")));
  Start({"--tls-client-ca-file", dir_ + "/client-ca.pem"});
  const std::string ca = Pki2().file("ca-one", ".pem");
  auto client = [&](const std::string& name) {
    return CallStatus(NewConnection(port_, ca, Pki2().file(name, ".pem"), Pki2().file(name, ".key")));
  };
  EXPECT_TRUE(client("client-one").ok());
  EXPECT_EQ(client("client-two").error_code(), grpc::StatusCode::UNAVAILABLE);
  HeldStream held(NewConnection(port_, ca, Pki2().file("client-one", ".pem"), Pki2().file("client-one", ".key")));
  ASSERT_TRUE(held.WaitStarted(15)) << ReadText(log_path());

  WriteText(dir_ + "/client-ca.pem", ReadText(Pki2().file("client-ca-two", ".pem")));
  Reload();
  const grpc::Status two = client("client-two");
  EXPECT_TRUE(two.ok()) << two.error_message() << "\n" << ReadText(log_path());
  EXPECT_EQ(client("client-one").error_code(), grpc::StatusCode::UNAVAILABLE);

  const TranscodeOutcome& out = held.Finish();
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(Frames(out), 2u);
}

TEST_F(CredentialReload, TheExpiryGaugesAreTheCertificatesNotAfterAndFollowARenewal) {
  Serve("conveyord-one");
  WriteText(dir_ + "/client-ca.pem", ReadText(Pki2().file("client-ca-one", ".pem")));
  Start({"--tls-client-ca-file", dir_ + "/client-ca.pem", "--metrics-listen", "127.0.0.1:0"});
  const std::string server = "conveyor_tls_certificate_expiry_timestamp_seconds{role=\"server\"}";
  const std::string client_ca = "conveyor_tls_certificate_expiry_timestamp_seconds{role=\"client_ca\"}";
  const double one = NotAfter(Pki2().file("conveyord-one", ".pem"));
  const double renewed = NotAfter(Pki2().file("conveyord-one-renewed", ".pem"));
  const double ca_one = NotAfter(Pki2().file("client-ca-one", ".pem"));
  ASSERT_GT(one, 0);
  ASSERT_GT(renewed, one + 86400) << "the renewal must move the date for the check below to mean anything";
  ASSERT_GT(NotAfter(Pki2().file("client-ca-long", ".pem")), ca_one + 86400);
  auto scrape = [&] { return testing::HttpGet(daemon_->metrics_port(), "/metrics").body; };
  std::string m = scrape();
  EXPECT_EQ(testing::SampleValue(m, server), one) << m;
  EXPECT_EQ(testing::SampleValue(m, client_ca), ca_one) << m;

  // A renewed certificate, and a CA file whose first certificate outlives its second:
  // the gauge shows the one that expires first.
  Serve("conveyord-one-renewed");
  WriteText(dir_ + "/client-ca.pem",
            ReadText(Pki2().file("client-ca-long", ".pem")) + ReadText(Pki2().file("client-ca-one", ".pem")));
  Reload();
  EXPECT_EQ(Count("reload refused"), 0u) << ReadText(log_path());
  m = scrape();
  EXPECT_EQ(testing::SampleValue(m, server), renewed) << m;
  EXPECT_EQ(testing::SampleValue(m, client_ca), ca_one) << m;
}

TEST_F(CredentialReload, AKeyPairThatDoesNotCheckOutIsRefusedAndTheOldCertificateStaysServed) {
  Serve("conveyord-one");
  Start({});
  const std::string both = Pki2().dir + "/both-cas.pem";

  // The new certificate with the old key: not a pair.
  Serve("conveyord-two", "conveyord-one");
  Reload();
  EXPECT_EQ(Count("reload refused"), 1u) << ReadText(log_path());
  EXPECT_TRUE(LogHas(log_path(), "is not the key of the certificate")) << ReadText(log_path());
  EXPECT_NE(ServedSubject(port_, both).find("conveyord-one"), std::string::npos) << ServedSubject(port_, both);

  // A certificate cut short.
  const std::string cert = ReadText(Pki2().file("conveyord-two", ".pem"));
  WriteText(dir_ + "/served.pem", cert.substr(0, cert.size() / 2) + "\n-----END CERTIFICATE-----\n");
  WriteText(dir_ + "/served.key", ReadText(Pki2().file("conveyord-two", ".key")));
  Reload();
  EXPECT_EQ(Count("reload refused"), 2u) << ReadText(log_path());
  EXPECT_TRUE(LogHas(log_path(), "server.tls_cert_file")) << ReadText(log_path());
  // Waits out the watcher's next read, which must not have picked anything up.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_NE(ServedSubject(port_, both).find("conveyord-one"), std::string::npos) << ServedSubject(port_, both);
  EXPECT_TRUE(CallStatus(NewConnection(port_, Pki2().file("ca-one", ".pem"))).ok());

  // A good pair after the refusals is taken.
  Serve("conveyord-two");
  Reload();
  EXPECT_EQ(Count("reload refused"), 2u) << ReadText(log_path());
  EXPECT_NE(ServedSubject(port_, both).find("conveyord-two"), std::string::npos) << ServedSubject(port_, both);
}

}  // namespace
}  // namespace conveyor::security_test
