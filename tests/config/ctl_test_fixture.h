// What conveyorctl's tests share: a fixture that runs conveyorctl in-process against a
// scripted fake Transcoder (fake_transcoder.h), and the responses the fake is given.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli.h"
#include "config_test_util.h"
#include "conveyor/v1/transcoder.pb.h"
#include "fake_transcoder.h"

namespace conveyor::ctl {

using testing::FakeServer;
using testing::FakeTranscoder;

inline constexpr size_t kMiB = size_t{1} << 20;

inline std::string Pattern(size_t size, uint32_t seed) {
  std::string s(size, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < size; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>(x >> 24);
  }
  return s;
}

inline v1::TranscodeResponse Packet(uint32_t rendition, uint64_t frame, const std::string& data,
                             bool eof) {
  v1::TranscodeResponse r;
  v1::OutputPacket* p = r.mutable_packet();
  p->set_rendition(rendition);
  p->set_frame_index(frame);
  p->set_pts(static_cast<int64_t>(frame));
  p->set_data(data);
  p->set_end_of_frame(eof);
  return r;
}

inline v1::TranscodeResponse Chunk(uint32_t rendition, const std::string& data, uint64_t offset) {
  v1::TranscodeResponse r;
  r.mutable_container_chunk()->set_rendition(rendition);
  r.mutable_container_chunk()->set_data(data);
  r.mutable_container_chunk()->set_offset(offset);
  return r;
}

inline v1::TranscodeResponse Insert(uint32_t rendition, const std::string& data, uint64_t offset) {
  v1::TranscodeResponse r = Chunk(rendition, data, offset);
  r.mutable_container_chunk()->set_insert(true);
  return r;
}

inline v1::TranscodeResponse Started() {
  v1::TranscodeResponse r;
  v1::Started* s = r.mutable_started();
  s->set_session_id("s-1");
  s->set_worker("cpu (2 threads)");
  s->set_backend("cpu");
  s->set_source_codec("h264");
  s->set_source_width(64);
  s->set_source_height(48);
  s->mutable_time_base()->set_num(1);
  s->mutable_time_base()->set_den(25);
  return r;
}

inline v1::TranscodeResponse Summary() {
  v1::TranscodeResponse r;
  v1::Summary* s = r.mutable_summary();
  s->set_frames_in(2);
  s->set_frames_out(2);
  s->set_wall_seconds(0.5);
  v1::StageSeconds* st = s->add_stages();
  st->set_stage("encode");
  st->set_seconds(0.25);
  return r;
}

inline v1::TranscodeResponse ProgressMsg() {
  v1::TranscodeResponse r;
  r.mutable_progress()->set_frames_in(1);
  r.mutable_progress()->set_frames_out(1);
  r.mutable_progress()->set_fps(12.5);
  return r;
}

class ConveyorctlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    socket_ = dir_.path() + "/fake.sock";
    server_ = std::make_unique<FakeServer>(&fake_, socket_);
    ASSERT_TRUE(server_->ok());
  }
  void TearDown() override { server_.reset(); }

  // Runs conveyorctl with `args` and --target pointing at the fake (`target`: another
  // form of it); returns the exit code.
  int Run(std::vector<std::string> args, const std::string& target = "") {
    args.insert(args.begin(), "conveyorctl");
    args.push_back("--target");
    args.push_back(target.empty() ? "unix:" + socket_ : target);
    std::vector<const char*> argv;
    for (const std::string& a : args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    std::ostringstream out, err;
    const int rc = RunConveyorctl(static_cast<int>(args.size()), argv.data(), out, err);
    out_ = out.str();
    err_ = err.str();
    return rc;
  }

  std::string Path(const std::string& name) const { return dir_.path() + "/" + name; }

  TempDir dir_;
  std::string socket_;
  FakeTranscoder fake_;
  std::unique_ptr<FakeServer> server_;
  std::string out_, err_;
};

}  // namespace conveyor::ctl
