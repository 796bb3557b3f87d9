// Security of conveyord's gRPC front end, end to end with the real daemon: TLS and mTLS
// on TCP listeners (real certificates from the openssl CLI), the refusal of plaintext
// non-loopback TCP, bearer tokens, own-session visibility, and conveyorctl over TLS.
#include <condition_variable>
#include <mutex>
#include <sstream>
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

#ifndef CONVEYORCTL_PATH
#error "CONVEYORCTL_PATH must name the conveyorctl binary"
#endif

namespace conveyor::security_test {
namespace {

using e2e::CheckHealth;
using e2e::DaemonProcess;
using e2e::HealthCheckOutcome;
using e2e::RunTranscode;
using e2e::Shell;
using e2e::TranscodeCall;
using e2e::TranscodeOutcome;
using e2e::TranscodeStream;

// A few raw 64x48 RGB frames, one rendition at the source size.
TranscodeCall RawCall(int frames) {
  TranscodeCall call;
  call.spec = RawSpec();
  call.deadline_s = 15;
  auto frame = std::make_shared<testing::SyntheticFrame>(testing::MakeSyntheticFrame(64, 48, PixelFormat::kRgb24, 5));
  call.send_input = [frame, frames](TranscodeStream* s) {
    for (int i = 0; i < frames; ++i) {
      if (!e2e::SendRawFrame(s, frame->bytes, i)) return false;
    }
    return true;
  };
  return call;
}

// conveyord started by hand, for the cases where it must refuse to start: exit status
// and stderr.
struct StartResult {
  int rc = 0;
  std::string err;
};
StartResult StartExpectingExit(const std::string& flags) {
  const std::string dir = e2e::MakeTempDir();
  StartResult r;
  r.rc = Shell("timeout 10 " CONVEYORD_PATH " --config '' --workers cpu --cpu-threads 1 --metrics-listen '' " + flags +
               " 2>" + dir + "/err >/dev/null");
  r.err = ReadText(dir + "/err");
  Shell("rm -rf '" + dir + "'");
  return r;
}

TEST(Tls, AClientWithTheCaTranscodesAndAPlaintextClientIsRefused) {
  DaemonProcess daemon(TlsFlags());
  ASSERT_TRUE(daemon.ready());
  const int port = daemon.tcp_port();
  ASSERT_GT(port, 0);
  auto stub = v1::Transcoder::NewStub(TcpChannel(port, {TestPki().ca}));
  const TranscodeOutcome out = RunTranscode(stub.get(), RawCall(3));
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(out.frames.at(0).size(), 3u);

  const grpc::Status plain = CallStatus(TcpChannel(port, {}));
  EXPECT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE) << plain.error_message();
  // The unix socket stays plaintext (its file permissions guard it).
  EXPECT_TRUE(CallStatus(daemon.Channel()).ok());
}

TEST(Tls, AClientThatDoesNotTrustTheServersCaIsRefused) {
  DaemonProcess daemon(TlsFlags());
  ASSERT_TRUE(daemon.ready());
  const int port = daemon.tcp_port();
  ASSERT_GT(port, 0);
  // The control: the same listener serves a client that trusts its CA, so the refusal
  // below is the handshake's verdict on the CA, not a listener that serves nobody.
  const grpc::Status trusted = CallStatus(TcpChannel(port, {TestPki().ca}));
  ASSERT_TRUE(trusted.ok()) << trusted.error_message();
  const grpc::Status st = CallStatus(TcpChannel(port, {TestPki().dir + "/rogue-ca.pem"}));
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
}

TEST(Mtls, OnlyAClientWithACertificateFromTheClientCaIsServed) {
  const Pki& p = TestPki();
  DaemonProcess daemon(TlsFlags(/*mtls=*/true));
  ASSERT_TRUE(daemon.ready());
  const int port = daemon.tcp_port();
  ASSERT_GT(port, 0);
  const grpc::Status no_cert = CallStatus(TcpChannel(port, {p.ca}));
  EXPECT_EQ(no_cert.error_code(), grpc::StatusCode::UNAVAILABLE) << no_cert.error_message();
  const grpc::Status rogue = CallStatus(TcpChannel(port, {p.ca, p.rogue_cert, p.rogue_key}));
  EXPECT_EQ(rogue.error_code(), grpc::StatusCode::UNAVAILABLE) << rogue.error_message();
  const grpc::Status good = CallStatus(TcpChannel(port, {p.ca, p.client_cert, p.client_key}));
  EXPECT_TRUE(good.ok()) << good.error_message();
  auto stub = v1::Transcoder::NewStub(TcpChannel(port, {p.ca, p.client_cert, p.client_key}));
  const TranscodeOutcome out = RunTranscode(stub.get(), RawCall(2));
  ASSERT_TRUE(out.status.ok()) << out.status.error_message();
  EXPECT_EQ(out.frames.at(0).size(), 2u);
}

TEST(Listen, PlaintextNonLoopbackTcpIsRefusedAtStartAndStartsWithTls) {
  const StartResult refused = StartExpectingExit("--listen 0.0.0.0:0");
  EXPECT_NE(refused.rc, 0);
  EXPECT_NE(refused.err.find("server.allow_insecure_tcp"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("0.0.0.0:0"), std::string::npos) << refused.err;

  std::vector<std::string> flags = TlsFlags();
  flags[1] = "0.0.0.0:0";
  DaemonProcess daemon(flags);
  ASSERT_TRUE(daemon.ready());
  const int port = daemon.tcp_port();
  ASSERT_GT(port, 0);
  const grpc::Status st = CallStatus(TcpChannel(port, {TestPki().ca}));
  EXPECT_TRUE(st.ok()) << st.error_message();
}

TEST(Listen, TokensOnPlaintextNonLoopbackTcpAreWarnedOfAtStart) {
  const std::string dir = e2e::MakeTempDir();
  WriteText(dir + "/tokens", "token-a\n");
  const std::string log = dir + "/log";
  {
    StderrToFile capture(log);
    DaemonProcess daemon({"--listen", "0.0.0.0:0", "--allow-insecure-tcp", "--auth-token-file", dir + "/tokens"});
    ASSERT_TRUE(daemon.ready()) << ReadText(log);
    EXPECT_EQ(daemon.Stop(), 0);
  }
  const std::string text = ReadText(log);
  EXPECT_NE(text.find("[warning] server.auth_token_file: tokens reach 0.0.0.0:0 in plaintext"), std::string::npos)
      << text;
  // The control: the same tokens over TLS draw no such warning.
  std::vector<std::string> flags = TlsFlags();
  flags[1] = "0.0.0.0:0";
  flags.insert(flags.end(), {"--auth-token-file", dir + "/tokens"});
  {
    StderrToFile capture(dir + "/tls.log");
    DaemonProcess daemon(flags);
    ASSERT_TRUE(daemon.ready()) << ReadText(dir + "/tls.log");
    EXPECT_EQ(daemon.Stop(), 0);
  }
  EXPECT_EQ(ReadText(dir + "/tls.log").find("in plaintext"), std::string::npos) << ReadText(dir + "/tls.log");
  e2e::Shell("rm -rf '" + dir + "'");
}

TEST(Listen, UnreadableOrInvalidSecurityFilesAreInvalidArgumentNamingTheOption) {
  const Pki& p = TestPki();
  StartResult r = StartExpectingExit("--listen 127.0.0.1:0 --tls-cert-file " + p.dir +
                                     "/missing.pem --tls-key-file " + p.server_key);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("server.tls_cert_file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("INVALID_ARGUMENT"), std::string::npos) << r.err;
  // A certificate where the key should be.
  r = StartExpectingExit("--listen 127.0.0.1:0 --tls-cert-file " + p.server_cert + " --tls-key-file " +
                         p.server_cert);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("server.tls_key_file"), std::string::npos) << r.err;
  // Only one of the pair.
  r = StartExpectingExit("--listen 127.0.0.1:0 --tls-cert-file " + p.server_cert);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("server.tls_key_file"), std::string::npos) << r.err;
  r = StartExpectingExit("--listen 127.0.0.1:0 --auth-token-file " + p.dir + "/missing.tokens");
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.err.find("server.auth_token_file"), std::string::npos) << r.err;
}

// A daemon on TLS with three tokens: A, B and an admin.
class Tokens : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = e2e::MakeTempDir();
    WriteText(dir_ + "/tokens", "# test tokens\ntoken-a\ntoken-b\n\ntoken-root admin\n");
    WriteText(dir_ + "/a.token", "token-a\n");
    std::vector<std::string> flags = TlsFlags();
    flags.push_back("--auth-token-file");
    flags.push_back(dir_ + "/tokens");
    flags.push_back("--metrics-listen");
    flags.push_back("127.0.0.1:0");
    daemon_ = std::make_unique<DaemonProcess>(flags);
    ASSERT_TRUE(daemon_->ready());
    port_ = daemon_->tcp_port();
    ASSERT_GT(port_, 0);
  }
  void TearDown() override {
    daemon_.reset();
    Shell("rm -rf '" + dir_ + "'");
  }
  std::shared_ptr<grpc::Channel> As(const std::string& token) { return TcpChannel(port_, {TestPki().ca, "", "", token}); }

  std::vector<v1::SessionInfo> List(const std::string& token) {
    auto stub = v1::Transcoder::NewStub(As(token));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ListSessionsResponse reply;
    const grpc::Status st = stub->ListSessions(&ctx, v1::ListSessionsRequest(), &reply);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return {reply.sessions().begin(), reply.sessions().end()};
  }
  grpc::Status Cancel(const std::string& token, const std::string& id) {
    auto stub = v1::Transcoder::NewStub(As(token));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::CancelSessionRequest req;
    req.set_session_id(id);
    v1::CancelSessionResponse reply;
    return stub->CancelSession(&ctx, req, &reply);
  }

  int port_ = 0;
  std::string dir_;
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(Tokens, AMissingOrWrongTokenIsUnauthenticatedAndTheRightOneWorks) {
  EXPECT_EQ(CallStatus(As("")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallStatus(As("token-c")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallStatus(As("token-")).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallStatus(daemon_->Channel()).error_code(), grpc::StatusCode::UNAUTHENTICATED);  // unix socket too
  EXPECT_TRUE(CallStatus(As("token-a")).ok());
  EXPECT_TRUE(CallStatus(As("token-root")).ok());

  auto anonymous = v1::Transcoder::NewStub(As(""));
  const TranscodeOutcome refused = RunTranscode(anonymous.get(), RawCall(1));
  EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << refused.status.error_message();
  EXPECT_FALSE(refused.started);
  auto wrong = v1::Transcoder::NewStub(As("token-x"));
  EXPECT_EQ(RunTranscode(wrong.get(), RawCall(1)).status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  auto a = v1::Transcoder::NewStub(As("token-a"));
  const TranscodeOutcome ok = RunTranscode(a.get(), RawCall(2));
  ASSERT_TRUE(ok.status.ok()) << ok.status.error_message();
  EXPECT_EQ(ok.frames.at(0).size(), 2u);
}

// GetServerStatus with `value` as the authorization metadata, as is.
grpc::Status StatusWithAuthorization(int port, const std::string& value) {
  auto stub = v1::Transcoder::NewStub(TcpChannel(port, {TestPki().ca}));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  ctx.AddMetadata("authorization", value);
  v1::ServerStatus reply;
  return stub->GetServerStatus(&ctx, v1::GetServerStatusRequest(), &reply);
}

// The sum of the series of `family` in a scrape.
double FamilySum(const std::string& body, const std::string& family) {
  double sum = 0;
  std::istringstream lines(body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(family + "{", 0) == 0) sum += std::stod(line.substr(line.rfind(' ') + 1));
  }
  return sum;
}

TEST_F(Tokens, RefusedTokensCountByReasonAndEveryCallByMethodAndCode) {
  const int metrics_port = daemon_->metrics_port();
  ASSERT_GT(metrics_port, 0);
  // The counts go from here: the test's wait for the daemon made a call too.
  const testing::HttpReply before = testing::HttpGet(metrics_port, "/metrics");
  ASSERT_EQ(before.status, 200);
  constexpr auto kRefused = grpc::StatusCode::UNAUTHENTICATED;
  EXPECT_EQ(CallStatus(As("")).error_code(), kRefused);
  EXPECT_EQ(CallStatus(As("token-x")).error_code(), kRefused);
  EXPECT_EQ(CallStatus(As("token-")).error_code(), kRefused);
  EXPECT_EQ(StatusWithAuthorization(port_, "Basic dG9rZW4tYQ==").error_code(), kRefused);
  EXPECT_TRUE(CallStatus(As("token-a")).ok());
  EXPECT_TRUE(CheckHealth(As(""), "", 5).status.ok());  // not a Transcoder call: not counted
  EXPECT_EQ(List("token-a").size(), 0u);
  EXPECT_EQ(Cancel("token-b", "no-such-session").error_code(), grpc::StatusCode::NOT_FOUND);
  auto anonymous = v1::Transcoder::NewStub(As(""));
  EXPECT_EQ(RunTranscode(anonymous.get(), RawCall(1)).status.error_code(), kRefused);
  auto a = v1::Transcoder::NewStub(As("token-a"));
  const TranscodeOutcome ok = RunTranscode(a.get(), RawCall(2));
  ASSERT_TRUE(ok.status.ok()) << ok.status.error_message();

  // Each call is counted before its status is sent: the scrape sees every one of them.
  const testing::HttpReply m = testing::HttpGet(metrics_port, "/metrics");
  ASSERT_EQ(m.status, 200);
  const auto added = [&](const std::string& series) {
    return testing::SampleValue(m.body, series) - testing::SampleValue(before.body, series);
  };
  EXPECT_EQ(added("conveyor_auth_failures_total{reason=\"missing\"}"), 2) << m.body;
  EXPECT_EQ(added("conveyor_auth_failures_total{reason=\"unknown_token\"}"), 2) << m.body;
  EXPECT_EQ(added("conveyor_auth_failures_total{reason=\"malformed\"}"), 1) << m.body;
  const std::string rpc = "conveyor_rpc_requests_total";
  EXPECT_EQ(added(rpc + "{method=\"GetServerStatus\",code=\"UNAUTHENTICATED\"}"), 4) << m.body;
  EXPECT_EQ(added(rpc + "{method=\"GetServerStatus\",code=\"OK\"}"), 1) << m.body;
  EXPECT_EQ(added(rpc + "{method=\"ListSessions\",code=\"OK\"}"), 1) << m.body;
  EXPECT_EQ(added(rpc + "{method=\"CancelSession\",code=\"NOT_FOUND\"}"), 1) << m.body;
  EXPECT_EQ(added(rpc + "{method=\"Transcode\",code=\"UNAUTHENTICATED\"}"), 1) << m.body;
  EXPECT_EQ(added(rpc + "{method=\"Transcode\",code=\"OK\"}"), 1) << m.body;
  EXPECT_EQ(FamilySum(m.body, rpc) - FamilySum(before.body, rpc), 9) << "the health check is no Transcoder call";
  // Transcode streams count the same in both families.
  EXPECT_EQ(added("conveyor_sessions_ended_total{code=\"UNAUTHENTICATED\"}"), 1) << m.body;
  EXPECT_EQ(added("conveyor_sessions_ended_total{code=\"OK\"}"), 1) << m.body;
}

TEST_F(Tokens, HealthCheckNeedsNoToken) {
  const HealthCheckOutcome health = CheckHealth(As(""), "", 5);
  EXPECT_TRUE(health.status.ok()) << health.status.error_message();
}

// A session that stays open until released.
class HeldSession {
 public:
  explicit HeldSession(std::shared_ptr<grpc::Channel> channel) : stub_(v1::Transcoder::NewStub(std::move(channel))) {
    call_ = RawCall(0);
    call_.send_input = [this](TranscodeStream*) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return released_; });
      return true;
    };
    thread_ = std::thread([this] { outcome_ = RunTranscode(stub_.get(), call_); });
  }
  ~HeldSession() { Release(); }
  // Lets the stream half-close; returns its outcome.
  const TranscodeOutcome& Release() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    return outcome_;
  }

 private:
  std::unique_ptr<v1::Transcoder::Stub> stub_;
  TranscodeCall call_;
  TranscodeOutcome outcome_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::thread thread_;
};

TEST_F(Tokens, ACallerSeesAndCancelsOnlyItsOwnSessionsUnlessAdmin) {
  HeldSession a(As("token-a"));
  std::vector<v1::SessionInfo> mine_a;
  for (int i = 0; i < 200 && mine_a.empty(); ++i) {
    mine_a = List("token-a");
    if (mine_a.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(mine_a.size(), 1u);
  HeldSession b(As("token-b"));
  std::vector<v1::SessionInfo> mine_b;
  for (int i = 0; i < 200 && mine_b.empty(); ++i) {
    mine_b = List("token-b");
    if (mine_b.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(mine_b.size(), 1u);
  const std::string id_a = mine_a[0].session_id(), id_b = mine_b[0].session_id();
  EXPECT_NE(id_a, id_b);
  // A still sees only its own.
  const std::vector<v1::SessionInfo> again_a = List("token-a");
  ASSERT_EQ(again_a.size(), 1u);
  EXPECT_EQ(again_a[0].session_id(), id_a);
  EXPECT_EQ(List("token-root").size(), 2u);

  // Another's session is answered as if it did not exist; the session lives on.
  const grpc::Status cross = Cancel("token-a", id_b);
  EXPECT_EQ(cross.error_code(), grpc::StatusCode::NOT_FOUND) << cross.error_message();
  EXPECT_EQ(Cancel("token-a", "no-such-session").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(List("token-b").size(), 1u);

  // The admin cancels B's, A cancels its own.
  EXPECT_TRUE(Cancel("token-root", id_b).ok());
  EXPECT_TRUE(Cancel("token-a", id_a).ok());
  EXPECT_EQ(b.Release().status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_EQ(a.Release().status.error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(Tokens, ConveyorctlSpeaksTlsAndSendsItsToken) {
  const std::string base = std::string(CONVEYORCTL_PATH) + " --target 127.0.0.1:" + std::to_string(port_) +
                           " --tls-ca " + TestPki().ca + " --tls-server-name localhost";
  const std::string out = dir_ + "/ctl.out";
  EXPECT_EQ(Shell(base + " --token-file " + dir_ + "/a.token status >" + out + " 2>&1"), 0) << ReadText(out);
  EXPECT_NE(ReadText(out).find("conveyord"), std::string::npos) << ReadText(out);
  EXPECT_EQ(Shell(base + " --token-file " + dir_ + "/a.token sessions >" + out + " 2>&1"), 0) << ReadText(out);
  EXPECT_EQ(Shell(base + " status >" + out + " 2>&1"), 1);
  EXPECT_NE(ReadText(out).find("UNAUTHENTICATED"), std::string::npos) << ReadText(out);
  // Plaintext to the TLS port fails.
  EXPECT_EQ(Shell(std::string(CONVEYORCTL_PATH) + " --target 127.0.0.1:" + std::to_string(port_) + " --token-file " +
                  dir_ + "/a.token status >" + out + " 2>&1"),
            1);
}

TEST(Mtls, ConveyorctlPresentsItsClientCertificate) {
  const Pki& p = TestPki();
  DaemonProcess daemon(TlsFlags(/*mtls=*/true));
  ASSERT_TRUE(daemon.ready());
  const int port = daemon.tcp_port();
  ASSERT_GT(port, 0);
  const std::string base = std::string(CONVEYORCTL_PATH) + " --target 127.0.0.1:" + std::to_string(port) +
                           " --tls-ca " + p.ca + " --timeout 5";
  const std::string out = daemon.dir() + "/ctl.out";
  EXPECT_EQ(Shell(base + " --tls-cert " + p.client_cert + " --tls-key " + p.client_key + " status >" + out + " 2>&1"),
            0)
      << ReadText(out);
  // Without a certificate, or with one the client CA did not sign, the server ends the
  // handshake; conveyorctl says what to check rather than only "Socket closed".
  EXPECT_EQ(Shell(base + " status >" + out + " 2>&1"), 1) << ReadText(out);
  EXPECT_NE(ReadText(out).find("give one it trusts with --tls-cert and --tls-key"), std::string::npos)
      << ReadText(out);
  EXPECT_EQ(Shell(base + " --tls-cert " + p.rogue_cert + " --tls-key " + p.rogue_key + " status >" + out + " 2>&1"), 1)
      << ReadText(out);
  EXPECT_NE(ReadText(out).find("refused the certificate in --tls-cert"), std::string::npos) << ReadText(out);
}

}  // namespace
}  // namespace conveyor::security_test
