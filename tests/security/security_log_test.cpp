// What the real conveyord's log says about the security of its front end: the audit
// lines (refused tokens, the session cap, a drain, who cancelled whose session, who
// started a session, each with the peer and the identity, never a token; a flood cut to
// the budget and summed up), and gRPC's own errors (a failed TLS handshake) as lines of
// the daemon's format with a level.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conveyor/v1/transcoder.grpc.pb.h"
#include "daemon_process.h"
#include "security_test_util.h"
#include "text_match.h"

namespace conveyor::security_test {
namespace {

using e2e::DaemonProcess;
using e2e::Shell;
using testing::FirstCapture;
using testing::LinesMatching;

// The daemon's plain (not a terminal, not the journal) line: time, level, message.
constexpr char kOurLine[] =
    R"(^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \[(?:trace|debug|info|warning|error|critical)\] )";

// A daemon on TLS with its log in dir/log.
class DaemonLog : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = e2e::MakeTempDir(); }
  void TearDown() override {
    daemon_.reset();
    Shell("rm -rf '" + dir_ + "'");
  }
  void Start(std::vector<std::string> flags) {
    flags.insert(flags.end(), {"--log-level", "info"});
    StderrToFile capture(log_path());
    daemon_ = std::make_unique<DaemonProcess>(flags);
    ASSERT_TRUE(daemon_->ready()) << ReadText(log_path());
    port_ = daemon_->tcp_port();
    ASSERT_GT(port_, 0);
  }
  std::string log_path() const { return dir_ + "/log"; }
  std::string log() const { return ReadText(log_path()); }

  std::string dir_;
  int port_ = 0;
  std::unique_ptr<DaemonProcess> daemon_;
};

// A Transcode stream that has sent its spec (and nothing else): the session it asked for
// is held, or refused, until Finish() half-closes the stream.
class OpenStream {
 public:
  explicit OpenStream(const std::shared_ptr<grpc::Channel>& channel) : stub_(v1::Transcoder::NewStub(channel)) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    stream_ = stub_->Transcode(&ctx_);
    v1::TranscodeRequest request;
    *request.mutable_spec() = RawSpec();
    stream_->Write(request);
  }
  ~OpenStream() {
    if (!finished_) ctx_.TryCancel();
    Finish();
  }
  grpc::Status Finish() {
    if (finished_) return status_;
    finished_ = true;
    stream_->WritesDone();
    v1::TranscodeResponse response;
    while (stream_->Read(&response)) {
    }
    return status_ = stream_->Finish();
  }

 private:
  std::unique_ptr<v1::Transcoder::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::TranscodeRequest, v1::TranscodeResponse>> stream_;
  bool finished_ = false;
  grpc::Status status_;
};

grpc::Status Cancel(const std::shared_ptr<grpc::Channel>& channel, const std::string& id) {
  auto stub = v1::Transcoder::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::CancelSessionRequest request;
  request.set_session_id(id);
  v1::CancelSessionResponse reply;
  return stub->CancelSession(&ctx, request, &reply);
}

constexpr char kPeer[] = R"(peer=ipv4:127\.0\.0\.1:\d+ )";
constexpr char kIdentity[] = R"((tok-[0-9a-f]{16}))";

// Tokens that must never appear in the log.
constexpr char kTokens[] = "s3cret-alpha\ns3cret-beta\ns3cret-root admin\n";

TEST_F(DaemonLog, RefusedTokensAreAuditedWithThePeerAndNeverTheToken) {
  WriteText(dir_ + "/tokens", kTokens);
  std::vector<std::string> flags = TlsFlags();
  flags.insert(flags.end(), {"--auth-token-file", dir_ + "/tokens"});
  Start(flags);
  const std::string ca = TestPki().ca;
  EXPECT_EQ(CallStatus(TcpChannel(port_, {ca})).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallStatus(TcpChannel(port_, {ca, "", "", "s3cret-gamma"})).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  OpenStream refused(TcpChannel(port_, {ca, "", "", "s3cret-gamma"}));
  EXPECT_EQ(refused.Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // Each call's line is written before its status is sent.
  const std::string line = std::string(kOurLine) + "audit: auth_failure " + kPeer + "identity=- ";
  EXPECT_EQ(LinesMatching(log(), line + "method=GetServerStatus reason=missing$").size(), 1u) << log();
  EXPECT_EQ(LinesMatching(log(), line + "method=GetServerStatus reason=unknown_token$").size(), 1u) << log();
  EXPECT_EQ(LinesMatching(log(), line + "method=Transcode reason=unknown_token$").size(), 1u) << log();
  // (The test's wait for the daemon made a call on the unix socket, with no token.)
  EXPECT_EQ(LinesMatching(log(), R"(\[warning\] audit: auth_failure peer=ipv4:)").size(), 3u) << "warnings";
  EXPECT_EQ(log().find("s3cret"), std::string::npos) << log();
}

TEST_F(DaemonLog, SessionStartsCapRefusalsAndCancelsNameWhoAndWhose) {
  WriteText(dir_ + "/tokens", kTokens);
  std::vector<std::string> flags = TlsFlags();
  flags.insert(flags.end(), {"--auth-token-file", dir_ + "/tokens", "--max-sessions", "1"});
  Start(flags);
  const std::string ca = TestPki().ca;
  auto as = [&](const std::string& token) { return TcpChannel(port_, {ca, "", "", token}); };

  OpenStream held(as("s3cret-alpha"));
  const std::string started = std::string(kOurLine) + "audit: session_start " + kPeer + "identity=" + kIdentity +
                              R"( session=[0-9a-f]{16} worker=(?:"[^"]*"|\S+) label=""$)";
  ASSERT_TRUE(WaitUntil([&] { return !LinesMatching(log(), started).empty(); }, 10)) << log();
  const std::string alpha = FirstCapture(log(), started);
  const std::string id = FirstCapture(log(), R"(audit: session_start .* session=(\w+))");
  EXPECT_NE(log().find("session " + id + ": started on"), std::string::npos) << log();

  OpenStream capped(as("s3cret-beta"));
  EXPECT_EQ(capped.Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  const std::string cap = std::string("audit: session_cap ") + kPeer + "identity=" + kIdentity +
                          R"re( code=RESOURCE_EXHAUSTED message="session limit reached \(1 active\)"$)re";
  const std::string beta = FirstCapture(log(), cap);
  ASSERT_FALSE(beta.empty()) << log();
  EXPECT_NE(beta, alpha);

  // Another's session, refused as if it did not exist; then the admin cancels it.
  EXPECT_EQ(Cancel(as("s3cret-beta"), id).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(Cancel(as("s3cret-root"), id).ok());
  EXPECT_EQ(held.Finish().error_code(), grpc::StatusCode::CANCELLED);
  const std::string cancel = std::string("audit: cancel ") + kPeer + "identity=" + kIdentity + " session=" + id +
                             " owner=" + alpha + " code=";
  EXPECT_EQ(FirstCapture(log(), cancel + "NOT_FOUND$"), beta) << log();
  const std::string root = FirstCapture(log(), cancel + "OK$");
  EXPECT_FALSE(root.empty()) << log();
  EXPECT_NE(root, alpha);
  EXPECT_NE(root, beta);
  EXPECT_EQ(log().find("s3cret"), std::string::npos) << log();
}

TEST_F(DaemonLog, AStreamRefusedWhileDrainingIsAudited) {
  std::vector<std::string> flags = TlsFlags();
  flags.insert(flags.end(), {"--drain-timeout", "20"});
  Start(flags);
  const std::string ca = TestPki().ca;
  OpenStream held(TcpChannel(port_, {ca}));
  ASSERT_TRUE(WaitUntil([&] { return !LinesMatching(log(), "audit: session_start ").empty(); }, 10)) << log();
  ASSERT_EQ(kill(daemon_->pid(), SIGTERM), 0);
  ASSERT_TRUE(WaitUntil([&] { return !LinesMatching(log(), ": draining ").empty(); }, 10)) << log();
  OpenStream late(TcpChannel(port_, {ca}));
  EXPECT_EQ(late.Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(LinesMatching(log(), std::string(kOurLine) + "audit: draining " + kPeer +
                                     "identity=anonymous code=UNAVAILABLE message=\".*draining.*\"$")
                .size(),
            1u)
      << log();
  EXPECT_TRUE(held.Finish().ok());
}

TEST_F(DaemonLog, UnderMutualTlsTheLinesNameTheClientCertificate) {
  Start(TlsFlags(/*mtls=*/true));
  const Pki& p = TestPki();
  OpenStream stream(TcpChannel(port_, {p.ca, p.client_cert, p.client_key}));
  const std::string line = std::string("audit: session_start ") + kPeer + R"(identity=anonymous cert="[^"]*CN=client)";
  EXPECT_TRUE(WaitUntil([&] { return !LinesMatching(log(), line).empty(); }, 10)) << log();
  EXPECT_TRUE(stream.Finish().ok());
}

TEST_F(DaemonLog, AFloodOfRefusedTokensIsCutToTheBudgetAndSummedUp) {
  WriteText(dir_ + "/tokens", kTokens);
  std::vector<std::string> flags = TlsFlags();
  flags.insert(flags.end(), {"--auth-token-file", dir_ + "/tokens"});
  Start(flags);
  const std::shared_ptr<grpc::Channel> wrong = TcpChannel(port_, {TestPki().ca, "", "", "s3cret-gamma"});
  constexpr int kCalls = 60;
  for (int i = 0; i < kCalls; ++i) ASSERT_EQ(CallStatus(wrong).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // The lines written and the ones summed up account for every call, once the last
  // window has passed. (The test's wait for the daemon made a call on the unix socket,
  // the window's first line.)
  const std::string summary = R"(audit: suppressed (\d+) similar auth_failure lines)";
  const std::string flood = "audit: auth_failure peer=ipv4:";
  auto accounted = [&] {
    const std::string text = log();
    size_t n = LinesMatching(text, flood).size();
    for (const std::string& line : LinesMatching(text, summary)) n += std::stoul(FirstCapture(line, summary));
    return n;
  };
  EXPECT_TRUE(WaitUntil([&] { return accounted() >= kCalls; }, 10)) << log();
  EXPECT_EQ(accounted(), static_cast<size_t>(kCalls)) << log();
  EXPECT_LT(LinesMatching(log(), flood).size(), static_cast<size_t>(kCalls)) << log();
  EXPECT_FALSE(LinesMatching(log(), std::string(kOurLine) + summary).empty()) << log();
}

TEST_F(DaemonLog, AFailedTlsHandshakeIsALineOfTheDaemonsFormatWithALevel) {
  Start(TlsFlags());
  const grpc::Status plain = CallStatus(TcpChannel(port_, {}));
  ASSERT_EQ(plain.error_code(), grpc::StatusCode::UNAVAILABLE) << plain.error_message();
  const std::string handshake = std::string(kOurLine) + R"(grpc: .*[Hh]andshake failed.* \(\S+\.cc:\d+\)$)";
  ASSERT_TRUE(WaitUntil([&] { return !LinesMatching(log(), handshake).empty(); }, 10)) << log();
  EXPECT_NE(LinesMatching(log(), handshake).front().find("[warning]"), std::string::npos)
      << "a peer's failed handshake is a warning: " << log();
  // None of gRPC's own lines ("E1206 07:40:21.084 123 file.cc:1501] ...") is left.
  EXPECT_TRUE(LinesMatching(log(), R"(^[EWID]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] )").empty()) << log();
}

}  // namespace
}  // namespace conveyor::security_test
