// The Transcode test client (see transcode_client.h).
#include "transcode_client.h"

#include <condition_variable>
#include <fstream>
#include <mutex>
#include <thread>

#include <grpcpp/generic/generic_stub.h>

namespace conveyor::e2e {

TranscodeOutcome RunTranscode(v1::Transcoder::Stub* stub, const TranscodeCall& call) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::chrono::duration<double>(call.deadline_s)));
  std::unique_ptr<TranscodeStream> stream = stub->Transcode(&context);
  std::thread writer([&] {
    v1::TranscodeRequest first;
    *first.mutable_spec() = call.spec;
    if (!stream->Write(first)) return;
    if (call.send_input && !call.send_input(stream.get())) return;
    if (call.half_close) stream->WritesDone();
  });
  TranscodeOutcome out;
  std::map<uint32_t, std::vector<uint8_t>> partial;
  v1::TranscodeResponse r;
  while (stream->Read(&r)) {
    out.largest_message = std::max(out.largest_message, r.ByteSizeLong());
    if (r.has_started()) {
      out.started = true;
      out.started_msg = r.started();
    } else if (r.has_packet()) {
      const v1::OutputPacket& p = r.packet();
      std::vector<uint8_t>& buf = partial[p.rendition()];
      if (p.has_shared()) {
        out.shared_packets++;
        const std::vector<uint8_t> jpeg = call.read_shared ? call.read_shared(p.shared()) : std::vector<uint8_t>();
        buf.insert(buf.end(), jpeg.begin(), jpeg.end());
      }
      buf.insert(buf.end(), p.data().begin(), p.data().end());
      if (p.end_of_frame()) {
        out.frames[p.rendition()].push_back(std::move(buf));
        out.pts[p.rendition()].push_back(p.pts());
        buf.clear();
      }
    } else if (r.has_container_chunk()) {
      std::vector<uint8_t>& c = out.containers[r.container_chunk().rendition()];
      c.insert(c.end(), r.container_chunk().data().begin(), r.container_chunk().data().end());
    } else if (r.has_progress()) {
      out.progress_messages++;
    } else if (r.has_summary()) {
      out.summary_seen = true;
      out.summary = r.summary();
    }
    if (call.on_response) call.on_response(r, &context);
  }
  writer.join();
  out.status = stream->Finish();
  return out;
}

v1::JobSpec RawYuv420pSpec(int width, int height, uint32_t shared_memory_slots) {
  v1::JobSpec spec;
  v1::RawInput* raw = spec.mutable_raw();
  raw->set_pixel_format(v1::PIXEL_FORMAT_YUV420P);
  raw->set_width(static_cast<uint32_t>(width));
  raw->set_height(static_cast<uint32_t>(height));
  raw->mutable_frame_rate()->set_num(30);
  raw->mutable_frame_rate()->set_den(1);
  raw->set_color_matrix(v1::COLOR_MATRIX_BT709);
  raw->set_shared_memory_slots(shared_memory_slots);
  return spec;
}

bool SendFileChunks(TranscodeStream* stream, const std::string& path, size_t chunk) {
  std::ifstream in(path, std::ios::binary);
  std::string buf(chunk, '\0');
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const std::streamsize n = in.gcount();
    if (n <= 0) break;
    v1::TranscodeRequest r;
    r.set_container_chunk(buf.data(), static_cast<size_t>(n));
    if (!stream->Write(r)) return false;
  }
  return true;
}

bool SendRawFrame(TranscodeStream* s, const std::vector<uint8_t>& bytes, int64_t pts, size_t chunk) {
  for (size_t off = 0; off < bytes.size(); off += chunk) {
    const size_t n = std::min(chunk, bytes.size() - off);
    v1::TranscodeRequest r;
    r.mutable_frame_chunk()->set_pts(pts);
    r.mutable_frame_chunk()->set_data(bytes.data() + off, n);
    r.mutable_frame_chunk()->set_end_of_frame(off + n == bytes.size());
    if (!s->Write(r)) return false;
  }
  return true;
}

HealthCheckOutcome CheckHealth(const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
                               double deadline_s) {
  // HealthCheckRequest{service}: field 1, length-delimited; the empty request for "".
  std::string request;
  if (!service.empty()) {
    request.push_back(0x0a);
    request.push_back(static_cast<char>(service.size()));
    request += service;
  }
  grpc::Slice slice(request);
  grpc::ByteBuffer in(&slice, 1), reply;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::chrono::duration<double>(deadline_s)));
  grpc::GenericStub generic(channel);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  HealthCheckOutcome out;
  // The generic stub's unary call has only the callback form.
  generic.UnaryCall(&context, "/grpc.health.v1.Health/Check", grpc::StubOptions(), &in, &reply,
                    [&](grpc::Status s) {
                      std::lock_guard<std::mutex> lock(mu);
                      out.status = std::move(s);
                      done = true;
                      cv.notify_all();
                    });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  if (!out.status.ok()) return out;
  std::vector<grpc::Slice> slices;
  if (grpc::Status dumped = reply.Dump(&slices); !dumped.ok()) {
    out.status = dumped;
    return out;
  }
  for (const grpc::Slice& s : slices) out.reply.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

}  // namespace conveyor::e2e
