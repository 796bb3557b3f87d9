// conveyor-bench-daemon's Transcode stream (see daemon_session.h): a writer thread sends
// the spec and the input while this thread reads the answers, stamping each frame.
#include "daemon_session.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "seekable_input.h"
#include "shared_frames_client.h"

namespace conveyor::bench {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

SessionResult RunSession(v1::Transcoder::Stub* stub, const DaemonBenchOptions& o, const std::vector<uint8_t>& input,
                         int raw_w, int raw_h) {
  SessionResult res;
  grpc::ClientContext ctx;
  std::unique_ptr<Stream> stream = stub->Transcode(&ctx);
  const size_t frame_bytes = static_cast<size_t>(raw_w) * raw_h * 3 / 2;
  std::mutex mu;
  std::vector<Clock::time_point> sent;  // raw: when frame i's last chunk went out
  std::atomic<uint64_t> received{0};
  e2e::SharedSlotTracker shm;  // shared memory: Started, the released and the filled slots
  std::unique_ptr<e2e::SharedJpegSlotsView> jpeg_memory;
  std::atomic<const e2e::SharedJpegSlotsView*> jpegs{nullptr};  // mapped before the first frame is sent
  std::atomic<bool> reader_done{false};
  ctl::ReadRequests requests;  // seekable: from this thread to the writer
  const auto t0 = Clock::now();
  std::thread writer([&] {
    v1::TranscodeRequest spec;
    v1::JobSpec* s = spec.mutable_spec();
    if (raw_w > 0) {
      s->mutable_raw()->set_pixel_format(v1::PIXEL_FORMAT_YUV420P);
      s->mutable_raw()->set_width(raw_w);
      s->mutable_raw()->set_height(raw_h);
      s->mutable_raw()->set_shared_memory_slots(static_cast<uint32_t>(o.shared_memory_slots));
      s->mutable_raw()->set_color_matrix(v1::COLOR_MATRIX_BT709);
    } else {
      s->mutable_container()->set_seekable(o.seekable);
      if (o.seekable) s->mutable_container()->set_size(input.size());
    }
    if (!o.decode.empty()) {
      s->set_decode(o.decode == "gpu" ? v1::DECODE_GPU : o.decode == "cpu" ? v1::DECODE_CPU : v1::DECODE_AUTO);
    }
    s->add_renditions()->set_quality(o.quality);
    if (o.start_seconds >= 0) s->set_start_seconds(o.start_seconds);
    s->set_max_frames(o.max_frames);
    s->set_keyframes_only(o.keyframes_only);
    if (o.fps_num > 0) {
      s->mutable_frame_rate()->set_num(o.fps_num);
      s->mutable_frame_rate()->set_den(o.fps_den);
    }
    if (o.container.empty()) {
      s->mutable_output()->mutable_frames()->set_shared_memory_slots(static_cast<uint32_t>(o.shared_output_slots));
    } else {
      s->mutable_output()->mutable_container()->set_format(o.container == "mov"   ? v1::CONTAINER_FORMAT_MOV
                                                           : o.container == "avi" ? v1::CONTAINER_FORMAT_AVI
                                                                                  : v1::CONTAINER_FORMAT_MATROSKA);
    }
    if (!stream->Write(spec)) return;
    if (raw_w == 0 && o.seekable) {
      // SendRanges returns once Summary closes the mailbox: until then a request can come,
      // so the stream stays open (no EndOfInput, no half-close before it).
      std::function<bool()> release;
      if (o.shared_output_slots > 0) {
        release = [&] { return e2e::ReleaseOutputSlots(stream.get(), shm.TakeFilledOutputSlots()); };
      }
      RangeTally tally;
      const bool ok = SendRanges(stream.get(), input, o.chunk_bytes, &requests, release, &tally);
      res.bytes_sent = tally.bytes_sent;
      if (!ok) return;
    } else if (raw_w == 0) {
      const bool releases = o.shared_output_slots > 0;
      for (size_t off = 0; off < input.size(); off += o.chunk_bytes) {
        v1::TranscodeRequest r;
        r.set_container_chunk(input.data() + off, std::min<size_t>(o.chunk_bytes, input.size() - off));
        if (!stream->Write(r)) return;
        res.bytes_sent += r.container_chunk().size();
        if (releases && !e2e::ReleaseOutputSlots(stream.get(), shm.TakeFilledOutputSlots())) return;
      }
      if (releases) {
        // The input ends without a half-close, so that the JPEG slots can still go back.
        v1::TranscodeRequest end;
        end.mutable_end_of_input();
        if (!stream->Write(end)) return;
        while (!reader_done.load()) {
          if (!e2e::ReleaseOutputSlots(stream.get(), shm.TakeFilledOutputSlots(1, 0.2))) break;
        }
      }
    } else {
      const size_t frames = input.size() / frame_bytes;
      std::unique_ptr<e2e::SharedFrameSlots> memory;
      if (o.shared_memory_slots > 0 || o.shared_output_slots > 0) {
        const std::optional<v1::Started> started = shm.WaitStartedMessage(60);
        if (!started) return;
        const v1::SharedMemoryInput& in = started->shared_memory();
        const v1::SharedMemoryOutput& out = started->shared_memory_output();
        std::string error, answer;
        if (o.shared_memory_slots > 0) {
          memory = e2e::SharedFrameSlots::Create(in.slots(), in.slot_bytes(), &error);
          if (!memory) answer = error;
        }
        int received = -1;
        if (answer.empty()) {
          answer = e2e::AttachSharedFrames(memory ? in.attach_socket() : out.attach_socket(),
                                           memory ? in.attach_key() : out.attach_key(), memory ? memory->fd() : -1,
                                           &received);
        }
        if (answer == "OK" && o.shared_output_slots > 0) {
          jpeg_memory = received >= 0 ? e2e::SharedJpegSlotsView::Map(received, out.slots(), out.slot_bytes(), &error)
                                      : nullptr;
          if (!jpeg_memory) answer = "no JPEG slots: " + error;
          jpegs = jpeg_memory.get();
        } else if (received >= 0) {
          close(received);
        }
        if (answer != "OK") {
          res.failure = "attach: " + answer;
          ctx.TryCancel();
          return;
        }
      }
      for (size_t i = 0; i < frames; ++i) {
        // Latency counts from just before the frame's last message is written: stamped
        // after Write() returns, a writer thread that the encode keeps off the CPU for a
        // while would stamp late, and frames would seem to take less than their encode.
        Clock::time_point last_write;
        if (memory) {
          const int slot = shm.TakeFreeSlot(60);
          if (slot < 0) return;
          std::memcpy(memory->slot(slot), input.data() + i * frame_bytes, frame_bytes);
          v1::TranscodeRequest r;
          r.mutable_shared_frame()->set_slot(static_cast<uint32_t>(slot));
          r.mutable_shared_frame()->set_pts(static_cast<int64_t>(i));
          last_write = Clock::now();
          if (!stream->Write(r)) return;
        }
        for (size_t off = 0; !memory && off < frame_bytes; off += 1 << 20) {
          const size_t n = std::min<size_t>(1 << 20, frame_bytes - off);
          v1::TranscodeRequest r;
          r.mutable_frame_chunk()->set_pts(static_cast<int64_t>(i));
          r.mutable_frame_chunk()->set_data(input.data() + i * frame_bytes + off, n);
          r.mutable_frame_chunk()->set_end_of_frame(off + n == frame_bytes);
          last_write = Clock::now();
          if (!stream->Write(r)) return;
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          sent.push_back(last_write);
        }
        if (o.lockstep) {
          while (received.load() <= i) std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
        // JPEG slots the reader has copied out go back before the next frame.
        if (o.shared_output_slots > 0 && !e2e::ReleaseOutputSlots(stream.get(), shm.TakeFilledOutputSlots())) return;
      }
    }
    stream->WritesDone();
  });
  v1::TranscodeResponse r;
  while (stream->Read(&r)) {
    if (r.has_started()) {
      res.decoder = r.started().decoder();
      res.decoder_detail = r.started().decoder_name() +
                           (r.started().decoder_api().empty() ? "" : " via " + r.started().decoder_api());
    }
    if (r.has_started() && raw_w == 0 && o.shared_output_slots > 0) {
      // Container input: the writer is busy sending bytes, so this thread attaches (before
      // it reads any packet).
      const v1::SharedMemoryOutput& out = r.started().shared_memory_output();
      int received = -1;
      std::string error;
      const std::string answer = e2e::AttachSharedFrames(out.attach_socket(), out.attach_key(), -1, &received);
      if (answer == "OK" && received >= 0) {
        jpeg_memory = e2e::SharedJpegSlotsView::Map(received, out.slots(), out.slot_bytes(), &error);
        jpegs = jpeg_memory.get();
      } else {
        res.failure = "attach: " + answer;
        ctx.TryCancel();
      }
    }
    if (r.has_packet() && r.packet().has_shared()) {
      res.shared_jpegs++;
      // What a client keeping the image does: copy it out, so that the slot can go back.
      const e2e::SharedJpegSlotsView* view = jpegs.load();
      const std::vector<uint8_t> jpeg = view ? view->Read(r.packet().shared()) : std::vector<uint8_t>();
      if (jpeg.empty()) {
        res.failure = "an OutputPacket named a JPEG slot outside the mapping";
        ctx.TryCancel();
      }
      res.bytes += jpeg.size();
    }
    shm.OnResponse(r);
    if (r.has_packet()) {
      res.bytes += r.packet().data().size();
      if (!r.packet().end_of_frame()) continue;
      const auto now = Clock::now();
      if (res.frames == 0) res.first_frame_s = std::chrono::duration<double>(now - t0).count();
      if (raw_w > 0) {
        std::lock_guard<std::mutex> lock(mu);
        if (res.frames < sent.size()) res.latencies.push_back(std::chrono::duration<double>(now - sent[res.frames]).count());
      }
      res.frames++;
      received = res.frames;
    } else if (r.has_container_chunk()) {
      res.bytes += r.container_chunk().data().size();
    } else if (r.has_read_request()) {
      requests.Post(r.read_request());
    } else if (r.has_summary()) {
      requests.Close();  // no request comes after Summary: the writer may half-close
      res.read_requests = r.summary().read_requests();
      res.spooled_bytes = r.summary().spooled_bytes();
      if (!o.container.empty()) res.frames = r.summary().frames_out();  // a muxed stream has no frame boundaries
      for (const auto& st : r.summary().stages()) {
        if (st.stage() == "encode") res.encode_s = st.seconds();
        if (st.stage() == "queue") res.queue_s = st.seconds();
        if (st.stage() == "handover") res.handover_s = st.seconds();
        res.stages.emplace_back(st.stage(), st.seconds());
      }
    }
  }
  reader_done = true;
  requests.Close();
  shm.End();
  writer.join();
  res.status = stream->Finish();
  return res;
}

}  // namespace conveyor::bench
