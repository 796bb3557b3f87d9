// The soak test's client behaviours (see soak_clients.h).
#include "soak_clients.h"

#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "daemon_probe.h"
#include "transcode_client.h"

namespace conveyor::soak {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The daemon's --test-fault-every hook words its errors like this (conveyord.cpp).
bool IsInjectedFault(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::INTERNAL && Contains(s.error_message(), "injected test fault");
}

std::string Describe(const grpc::Status& s) {
  return "status " + std::to_string(static_cast<int>(s.error_code())) + " (" + s.error_message() + ")";
}

size_t FrameCount(const e2e::TranscodeOutcome& out) {
  size_t n = 0;
  for (const auto& [r, frames] : out.frames) n += frames.size();
  return n;
}

// Runs the stream `make_call` builds, again while the daemon answers RESOURCE_EXHAUSTED
// at its session cap: 64 clients loop against a cap of 64, and one may start its next
// stream a moment before the daemon has let go of its last (it does so after the status
// is sent). `make_call` resets whatever state the call's callbacks keep.
e2e::TranscodeOutcome RunRetryingAtCap(v1::Transcoder::Stub* stub, const std::function<e2e::TranscodeCall()>& make_call,
                                       SessionRecord* record) {
  for (;;) {
    const e2e::TranscodeCall call = make_call();
    e2e::TranscodeOutcome out = e2e::RunTranscode(stub, call);
    const bool at_cap = out.status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED && !out.started &&
                        Contains(out.status.error_message(), "session limit");
    if (!at_cap || record->refused >= 100) return out;
    ++record->refused;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Note(const e2e::TranscodeOutcome& out, SessionRecord* record) {
  record->code = out.status.error_code();
  record->message = out.status.error_message();
  record->frames = FrameCount(out);
  record->faulted = IsInjectedFault(out.status);
}

}  // namespace

const char* RoleName(Role role) {
  switch (role) {
    case Role::kGood: return "good";
    case Role::kCancel: return "cancel";
    case Role::kStall: return "stall";
    case Role::kGarbage: return "garbage";
  }
  return "?";
}

std::unique_ptr<v1::Transcoder::Stub> NewClientStub(const std::string& target) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
  return v1::Transcoder::NewStub(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
}

SessionRecord RunGoodClient(const ClientEnv& env, const StreamSpec& spec, const Reference& want) {
  SessionRecord record;
  record.role = Role::kGood;
  record.what = spec.name;
  auto stub = NewClientStub(env.target);
  const e2e::TranscodeOutcome out = RunRetryingAtCap(
      stub.get(),
      [&] {
        e2e::TranscodeCall call;
        call.spec = spec.job;
        call.spec.set_client_label("soak good");
        call.deadline_s = 120;
        call.send_input = [&](e2e::TranscodeStream* s) { return SendStream(s, spec, spec.length(), true); };
        return call;
      },
      &record);
  Note(out, &record);
  if (record.faulted) {
    record.problem = CompareWithReference(out, want, false);
  } else if (!out.status.ok()) {
    record.problem = Describe(out.status);
  } else {
    record.problem = CompareWithReference(out, want, true);
    const size_t source_frames = want.frames.at(0).size();
    if (record.problem.empty() && (!out.summary_seen || out.summary.frames_out() != source_frames)) {
      record.problem = "the summary does not count " + std::to_string(source_frames) + " frames out";
    }
  }
  return record;
}

SessionRecord RunCancellingClient(const ClientEnv& env, const StreamSpec& spec, const Reference& want,
                                  size_t cancel_after) {
  SessionRecord record;
  record.role = Role::kCancel;
  record.what = spec.name + ", cancelled after " + std::to_string(cancel_after) + " frames";
  auto stub = NewClientStub(env.target);
  size_t seen = 0;
  bool cancelled = false;
  const e2e::TranscodeOutcome out = RunRetryingAtCap(
      stub.get(),
      [&] {
        seen = 0;
        cancelled = false;
        e2e::TranscodeCall call;
        call.spec = spec.job;
        call.spec.set_client_label("soak cancel");
        call.deadline_s = 120;
        // The stream stays open after the input, so it cannot end before the cancel.
        call.half_close = false;
        call.send_input = [&](e2e::TranscodeStream* s) { return SendStream(s, spec, spec.length(), true); };
        call.on_response = [&](const v1::TranscodeResponse& r, grpc::ClientContext* ctx) {
          if (r.has_packet() && r.packet().end_of_frame()) ++seen;
          const bool point = cancel_after == 0 ? r.has_started() : seen >= cancel_after;
          if (!cancelled && point) {
            cancelled = true;
            ctx->TryCancel();
          }
        };
        return call;
      },
      &record);
  Note(out, &record);
  if (!record.faulted && out.status.error_code() != grpc::StatusCode::CANCELLED) {
    record.problem = "expected CANCELLED, got " + Describe(out.status);
  } else {
    record.problem = CompareWithReference(out, want, false);
  }
  return record;
}

SessionRecord RunStallingClient(const ClientEnv& env, const StreamSpec& spec, size_t read_before_stall) {
  SessionRecord record;
  record.role = Role::kStall;
  record.what = spec.name + ", stalls after " + std::to_string(read_before_stall) + " frames";
  auto stub = NewClientStub(env.target);
  auto observer = NewClientStub(env.target);  // ListSessions while this client's reads stand still
  std::atomic<bool> stop{false};
  std::string id;
  size_t seen = 0;
  bool stalled = false;
  double released_after = -1, released_after_idle = -1;
  const double wait_limit_s = 2 * env.idle_timeout_s + 15;
  const e2e::TranscodeOutcome out = RunRetryingAtCap(
      stub.get(),
      [&] {
        stop = false;
        id.clear();
        seen = 0;
        stalled = false;
        released_after = released_after_idle = -1;
        e2e::TranscodeCall call;
        call.spec = spec.job;
        call.spec.set_client_label("soak stall");
        call.deadline_s = wait_limit_s + 60;
        call.half_close = false;
        call.send_input = [&](e2e::TranscodeStream* s) {
          SendStream(s, spec, size_t{1} << 20, false, &stop);  // until the daemon stops taking it
          return false;
        };
        call.on_response = [&](const v1::TranscodeResponse& r, grpc::ClientContext*) {
          if (r.has_started()) id = r.started().session_id();
          if (r.has_packet() && r.packet().end_of_frame()) ++seen;
          if (stalled || id.empty() || seen < read_before_stall) return;
          // The stall: this thread reads nothing more until the daemon has let the session
          // go; what it sends waits in the transport meanwhile.
          stalled = true;
          const Clock::time_point t0 = Clock::now();
          Clock::time_point last_frame = t0;  // when the daemon's frame count last moved
          bool first = true;
          while (SecondsSince(t0) < wait_limit_s) {
            StatusOr<std::optional<v1::SessionInfo>> listed = FindSession(observer.get(), id);
            if (listed.ok() && !listed->has_value()) {
              released_after = SecondsSince(t0);
              released_after_idle = SecondsSince(last_frame);
              break;
            }
            if (listed.ok()) {
              // How far the daemon got past the client: what the transport took in.
              if (first) record.frames_out_at_stall = (*listed)->frames_out();
              if (!first && (*listed)->frames_out() != record.frames_out_at_release) last_frame = Clock::now();
              record.frames_out_at_release = (*listed)->frames_out();
              first = false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
          stop = true;
        };
        return call;
      },
      &record);
  Note(out, &record);
  record.released_after_s = released_after;
  record.released_after_idle_s = released_after_idle;
  // From its last frame the session is idle (the client reads nothing, so nothing more is
  // written, and its input stops once the output bound is reached): the reaper's period
  // (a quarter of the timeout) and this loop's polling come on top of one idle timeout.
  const double idle_limit_s = 1.6 * env.idle_timeout_s + 1;
  const grpc::StatusCode code = out.status.error_code();
  if (record.faulted) return record;  // a fault ended it before the stall mattered
  if (!stalled) {
    record.problem = "the stream ended before the client stalled: " + Describe(out.status);
  } else if (released_after < 0) {
    record.problem = "the daemon still lists the session " + std::to_string(wait_limit_s) +
                     " s after its client stopped reading";
  } else if (released_after < env.idle_timeout_s * 0.9) {
    record.problem = "released after " + std::to_string(released_after) + " s, before the idle timeout";
  } else if (released_after_idle > idle_limit_s) {
    record.problem = "released " + std::to_string(released_after_idle) + " s after the daemon's last frame for it: " +
                     "more than one idle timeout (" + std::to_string(env.idle_timeout_s) + " s)";
  } else if (code != grpc::StatusCode::DEADLINE_EXCEEDED && code != grpc::StatusCode::CANCELLED) {
    record.problem = "expected DEADLINE_EXCEEDED or CANCELLED, got " + Describe(out.status);
  } else if (code == grpc::StatusCode::DEADLINE_EXCEEDED && !Contains(out.status.error_message(), "idle")) {
    record.problem = "DEADLINE_EXCEEDED without naming the idle timeout: " + out.status.error_message();
  }
  return record;
}

SessionRecord RunGarbageClient(const ClientEnv& env, const StreamSpec& spec, int kind, uint32_t seed) {
  static const char* const kNames[kGarbageKinds] = {
      "a short frame", "a frame with extra bytes", "random bytes as a container",
      "container bytes on a raw job", "quality 101", "an empty request", "input ending inside a frame"};
  // What the INVALID_ARGUMENT message must name, per kind.
  // (The short frame's number is not checked: the daemon can name the one before it while
  // its pipeline thread is taking a frame off the queue; reported with the soak.)
  static const char* const kExpect[kGarbageKinds] = {"bytes, but a", "more than", "input", "raw frames", "quality",
                                                     "empty request", "inside a frame"};
  SessionRecord record;
  record.role = Role::kGarbage;
  record.what = kNames[kind] + std::string(" on ") + spec.name;
  auto stub = NewClientStub(env.target);
  const std::vector<uint8_t>& frame = spec.frames.at(0);
  std::vector<uint8_t> noise(64 << 10);
  std::mt19937 rng(seed);
  for (uint8_t& b : noise) b = static_cast<uint8_t>(rng());
  const e2e::TranscodeOutcome out = RunRetryingAtCap(
      stub.get(),
      [&] {
        e2e::TranscodeCall call;
        call.spec = spec.job;
        call.spec.set_client_label("soak garbage");
        call.deadline_s = 60;
        switch (kind) {
          case 0:
            call.send_input = [&](e2e::TranscodeStream* s) {
              if (!SendStream(s, spec, 2, false)) return false;
              const std::vector<uint8_t> short_frame(frame.begin(), frame.end() - 10);
              return e2e::SendRawFrame(s, short_frame, PtsOf(spec, 2), spec.chunk);
            };
            break;
          case 1:
            call.send_input = [&](e2e::TranscodeStream* s) {
              std::vector<uint8_t> long_frame = frame;
              long_frame.resize(frame.size() + 16);
              return e2e::SendRawFrame(s, long_frame, 0, long_frame.size());
            };
            break;
          case 2:
            call.spec.clear_raw();
            call.spec.mutable_container();
            call.send_input = [&](e2e::TranscodeStream* s) {
              v1::TranscodeRequest r;
              r.set_container_chunk(noise.data(), noise.size());
              return s->Write(r);
            };
            break;
          case 3:
            call.send_input = [&](e2e::TranscodeStream* s) {
              v1::TranscodeRequest r;
              r.set_container_chunk(noise.data(), 4096);
              return s->Write(r);
            };
            break;
          case 4:
            call.spec.mutable_renditions(0)->set_quality(101);
            break;
          case 5:
            call.send_input = [](e2e::TranscodeStream* s) { return s->Write(v1::TranscodeRequest()); };
            break;
          case 6:
            call.send_input = [&](e2e::TranscodeStream* s) {
              v1::TranscodeRequest r;
              r.mutable_frame_chunk()->set_data(frame.data(), frame.size() / 2);
              return s->Write(r);
            };
            break;
        }
        return call;
      },
      &record);
  Note(out, &record);
  if (record.faulted && kind == 0) {  // its first two frames reach the worker
    return record;
  }
  if (out.status.error_code() != grpc::StatusCode::INVALID_ARGUMENT) {
    record.problem = "expected INVALID_ARGUMENT, got " + Describe(out.status);
  } else if (!Contains(out.status.error_message(), kExpect[kind])) {
    record.problem = "the message does not name '" + std::string(kExpect[kind]) + "': " + out.status.error_message();
  }
  return record;
}

}  // namespace conveyor::soak
