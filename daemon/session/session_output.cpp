// A Transcode stream's output (see session.h): Started and the renditions, frames
// submitted to the worker, and each finished frame sent as JPEG packets (in messages or
// shared-memory slots) or muxed into container chunks, with the output backpressure.
#include "session.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

extern "C" {
#include <libavutil/mathematics.h>
}

namespace conveyor {

Status Session::BeginOutput(int width, int height, int rate_num, int rate_den, int tb_num, int tb_den,
                            const std::string& codec, const media::DisplayOrientation& display,
                            AVFieldOrder field_order, const AVCodecParameters* audio, AVRational audio_time_base) {
  // Autorotate turns every frame; the renditions are of the turned picture. Otherwise
  // the orientation goes with the output: an Exif tag in each JPEG, the matrix in MOV.
  const bool turned = job_.autorotate && !display.orientation.identity();
  turn_ = turned ? display.orientation : Orientation{};
  const Orientation carried = turned ? Orientation{} : display.orientation;
  if (turn_.transpose) std::swap(width, height);
  ASSIGN_OR_RETURN(renditions_, ResolveRenditions(job_, width, height, options_.limits));
  // Container input's size is known now, and within the limits: the session is charged
  // for it, and ends here, before Started, if that does not fit in the memory budget.
  if (memory_check_) RETURN_IF_ERROR(memory_check_(EstimateSessionMemory(job_, options_, width, height)));
  if (!carried.identity() && !job_.container_output) {
    for (Rendition& r : renditions_) r.params.exif_orientation = ExifOrientation(carried);
  }
  if (display.odd_angle) {
    notes_.push_back("orientation: the display matrix rotates by " + std::to_string(display.rotation_degrees) +
                     " degrees, not a multiple of 90; the pixels stay as decoded");
  } else if (!carried.identity() && job_.container_output && job_.container != media::ContainerFormat::kMov) {
    notes_.push_back(std::string("orientation: ") + media::ContainerFormatName(job_.container) +
                     " output cannot carry the display matrix (FFmpeg 5.1's muxer); the frames are stored as "
                     "decoded, to be shown with " + OrientationName(carried));
  }
  if (job_.selection.sampled()) {
    // The frames are written on the frame_rate grid, and their pts are its points.
    const SelectionSpec& sel = job_.selection;
    sampler_.emplace(sel.frame_rate_num, sel.frame_rate_den, tb_num, tb_den, sel.max_frames);
    rate_num = sel.frame_rate_num;
    rate_den = sel.frame_rate_den;
    tb_num = sel.frame_rate_den;
    tb_den = sel.frame_rate_num;
  }
  if (job_.storyboard()) {
    // Tiles have no orientation of their own to carry: a sprite's Exif tag would turn the grid.
    renditions_[0].params.exif_orientation = 0;
    const RequestedRendition& grid = job_.renditions[0];
    storyboard_.emplace(grid.tile_columns, grid.tile_rows, renditions_[0].width, renditions_[0].height, tb_num, tb_den);
  }
  // Each rendition's JPEG size: 0 x 0 is the source size; a storyboard's is its sprite's.
  std::vector<std::pair<int, int>> sizes;
  std::vector<std::string> labels;
  for (const Rendition& r : renditions_) {
    sizes.emplace_back(storyboard_ ? storyboard_->sprite_width() : r.width == 0 ? width : r.width,
                       storyboard_ ? storyboard_->sprite_height() : r.height == 0 ? height : r.height);
    labels.push_back(std::to_string(sizes.back().first) + "x" + std::to_string(sizes.back().second));
  }
  meter_.SetRenditions(labels);
  v1::TranscodeResponse r;
  v1::Started* started = r.mutable_started();
  started->set_session_id(id_);
  started->set_worker(worker_name_);
  started->set_backend(worker_.backend);
  started->mutable_time_base()->set_num(tb_num);
  started->mutable_time_base()->set_den(tb_den);
  started->set_source_width(width);
  started->set_source_height(height);
  started->set_source_codec(codec);
  if (source_time_base_.num > 0 && source_time_base_.den > 0) {
    const AVRational out{tb_num, tb_den};
    if (source_start_pts_ != AV_NOPTS_VALUE) {
      started->set_source_start_pts(av_rescale_q(source_start_pts_, source_time_base_, out));
    }
    if (source_duration_ > 0) started->set_source_duration(av_rescale_q(source_duration_, source_time_base_, out));
    started->set_source_frames(static_cast<uint64_t>(source_frames_));
  }
  started->set_rotation_degrees(display.rotation_degrees);
  if (codec != "rawvideo") started->set_exif_orientation(static_cast<uint32_t>(ExifOrientation(display.orientation)));
  started->set_autorotated(turned);
  started->set_decoder(decoder_);
  started->set_decoder_api(decoder_api_);
  started->set_decoder_name(decoder_name_);
  for (const std::string& note : notes_) started->add_notes(note);
  if (job_.output_shared_slots > 0) {
    ASSIGN_OR_RETURN(std::unique_ptr<SharedJpegSlots> slots,
                     SharedJpegSlots::Create(job_.output_shared_slots, SharedJpegSlotBytes(sizes), "conveyor-jpegs"));
    v1::SharedMemoryOutput* shm = started->mutable_shared_memory_output();
    shm->set_attach_socket(attach_socket_);
    shm->set_attach_key(attach_key_);
    shm->set_slot_bytes(slots->slot_bytes());
    shm->set_slots(static_cast<uint32_t>(slots->slots()));
    std::lock_guard<std::mutex> lock(state_mu_);
    shared_out_ = std::move(slots);
  }
  if (job_.shared_memory_slots > 0) {
    v1::SharedMemoryInput* shm = started->mutable_shared_memory();
    shm->set_attach_socket(attach_socket_);
    shm->set_attach_key(attach_key_);
    shm->set_slot_bytes(job_.RawFrameBytes());
    shm->set_slots(static_cast<uint32_t>(job_.shared_memory_slots));
  }
  Send(std::move(r));
  if (!job_.container_output) return OkStatus();
  for (size_t i = 0; i < renditions_.size(); ++i) {
    media::MuxerOptions mo;
    mo.format = job_.container;
    mo.width = sizes[i].first;
    mo.height = sizes[i].second;
    mo.time_base = AVRational{tb_num, tb_den};
    mo.frame_rate = AVRational{rate_num, rate_den};
    mo.orientation = carried;
    // Deinterlaced frames are progressive; kept ones say the source's field order.
    const bool interlaced_source = field_order == AV_FIELD_TT || field_order == AV_FIELD_BB ||
                                   field_order == AV_FIELD_TB || field_order == AV_FIELD_BT;
    const bool deinterlaced = job_.deinterlace == Job::Deinterlace::kOn ||
                              (job_.deinterlace == Job::Deinterlace::kAuto && interlaced_source);
    mo.field_order = deinterlaced ? AV_FIELD_PROGRESSIVE : field_order;
    mo.audio = audio;
    mo.audio_time_base = audio_time_base;
    const uint32_t index = static_cast<uint32_t>(i);
    // Container bytes for the client's file: written at offset, or inserted there.
    auto chunks = [this, index](bool insert) {
      return [this, index, insert](uint64_t offset, const uint8_t* data, size_t size) -> Status {
        v1::TranscodeResponse chunk;
        v1::ContainerChunk* c = chunk.mutable_container_chunk();
        c->set_rendition(index);
        c->set_data(data, size);
        c->set_offset(offset);
        c->set_insert(insert);
        bytes_out_ += size;
        meter_.BytesOut(size);
        Send(std::move(chunk));
        return OkStatus();
      };
    };
    mo.faststart = job_.container_faststart;
    ASSIGN_OR_RETURN(std::unique_ptr<media::ContainerMuxer> m,
                     media::ContainerMuxer::OpenAt(mo, chunks(false), job_.container_seekable,
                                                   media::ContainerMuxer::InsertSink(chunks(true))));
    muxers_.push_back(std::move(m));
  }
  return OkStatus();
}

Status Session::SubmitKept(KeptFrame&& frame) {
  if (!sampler_) return SubmitFrame(std::move(frame), OutputTimes{frame.pts, 1});
  const FrameRateSampler::Span span = sampler_->done() ? FrameRateSampler::Span{} : sampler_->Next(frame.pts);
  std::optional<KeptFrame> before = std::exchange(held_, std::move(frame));
  if (sampler_->done()) held_.reset();  // max_frames: no later frame is written
  if (!before) return OkStatus();
  if (span.count == 0) {
    if (before->on_input_released) before->on_input_released();
    return OkStatus();  // covers no grid point: dropped, as the fps filter drops it
  }
  return SubmitFrame(std::move(*before), OutputTimes{span.first, span.count});
}

Status Session::FinishKept(int64_t end_pts) {
  RETURN_IF_ERROR(FinishSampling(end_pts));
  // The cells' clock: the frame_rate grid (the last point lasts one step), else the input's.
  if (storyboard_) return FinishStoryboard(sampler_ ? last_cell_pts_ + 1 : end_pts);
  return OkStatus();
}

Status Session::FinishSampling(int64_t end_pts) {
  if (!sampler_) return OkStatus();
  std::optional<KeptFrame> last = std::exchange(held_, std::nullopt);
  if (!last) return OkStatus();
  const FrameRateSampler::Span span = sampler_->done() ? FrameRateSampler::Span{} : sampler_->Finish(end_pts);
  if (span.count == 0) {
    if (last->on_input_released) last->on_input_released();
    return OkStatus();
  }
  return SubmitFrame(std::move(*last), OutputTimes{span.first, span.count});
}

Status Session::SubmitFrame(KeptFrame&& frame, OutputTimes times) {
  if (storyboard_) return SubmitTiles(std::move(frame), times);
  FrameRequest request;
  request.frame = frame.view;
  request.orientation = turn_;
  if (frame.deinterlace) request.deinterlace = *frame.deinterlace;
  request.renditions = renditions_;
  request.owner = std::move(frame.keepalive);  // the CPU worker encodes from it, the GPU worker copies
  request.device = frame.device;
  request.on_input_released = std::move(frame.on_input_released);
  return SubmitToLane(std::move(request), times);
}

Status Session::SubmitToLane(FrameRequest request, OutputTimes times) {
  const auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  {
    const auto waiting = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(state_mu_);
    state_cv_.wait(lock, [&] { return cancelled_ || unsent_bytes_ < options_.output_bytes; });
    output_wait_seconds_ += since(waiting);
    if (cancelled_) return failure_;
    ++submitted_;
  }
  request.id = frames_in_.load();
  // The session's own stream of frames: in order among themselves, never held back by
  // another session's. The address is unique among live sessions, and a session lives
  // while the worker holds any of its frames (on_done keeps it).
  request.stream = reinterpret_cast<uintptr_t>(this);
  request.on_done = [self = shared_from_this(), times](FrameResult&& r) { self->OnFrameDone(times, std::move(r)); };
  const auto submitting = std::chrono::steady_clock::now();
  Status s = lane_->Submit(std::move(request));
  lane_wait_seconds_ += since(submitting);
  if (!s.ok()) {
    std::lock_guard<std::mutex> lock(state_mu_);
    --submitted_;
    return cancelled_ ? failure_ : s;
  }
  return OkStatus();
}

void Session::OnFrameDone(OutputTimes times, FrameResult&& result) {
  DoneFrame frame{times, std::move(result), std::chrono::steady_clock::now(), 0};
  // Its JPEGs count as output not yet written from now on, as they would once sent, so
  // that the output bound holds back the next frame already (SubmitFrame).
  for (const JpegBytes& jpeg : frame.result.jpeg) frame.reserved_bytes += jpeg.size();
  {
    std::lock_guard<std::mutex> lock(output_mu_);
    if (!output_stopped_) {
      AddUnsent(frame.reserved_bytes);  // before the output thread can see the frame
      output_queue_.push_back(std::move(frame));
      output_cv_.notify_one();
      return;
    }
  }
  // The session has ended without this frame (it failed, and the worker was slow to
  // return it): nothing is sent any more, the frame only counts as returned.
  FrameCompleted();
}

void Session::OutputLoop() {
  std::unique_lock<std::mutex> lock(output_mu_);
  for (;;) {
    output_cv_.wait(lock, [&] { return output_stopping_ || !output_queue_.empty(); });
    if (output_queue_.empty()) break;
    DoneFrame frame = std::move(output_queue_.front());
    output_queue_.pop_front();
    lock.unlock();
    WriteFrame(frame);
    frame = DoneFrame{};  // gives lent readback memory back before waiting again
    lock.lock();
  }
  output_stopped_ = true;
}

void Session::StopOutput() {
  {
    std::lock_guard<std::mutex> lock(output_mu_);
    output_stopping_ = true;
  }
  output_cv_.notify_one();
  if (output_thread_.joinable()) output_thread_.join();
  std::lock_guard<std::mutex> lock(output_mu_);
  output_stopped_ = true;  // also when Start() never ran
}

void Session::AddUnsent(size_t bytes) {
  std::lock_guard<std::mutex> lock(state_mu_);
  unsent_bytes_ += bytes;
}

void Session::DropUnsent(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    unsent_bytes_ -= std::min(bytes, unsent_bytes_);
  }
  state_cv_.notify_all();
}

void Session::FrameCompleted() {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    ++completed_;
  }
  state_cv_.notify_all();
}

void Session::WriteFrame(DoneFrame& frame) {
  FrameResult& result = frame.result;
  Touch();
  bool ok = result.status.ok();
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    ok = ok && !cancelled_;
  }
  if (!result.status.ok()) {
    meter_.FrameFailed(result.status);
    Fail(result.status.WithContext("frame " + std::to_string(frames_out_.load())));
  } else if (ok && frame.times.kind == OutputTimes::Kind::kTiles) {
    // Placed in the open sprite, which is written when it is encoded.
  } else if (ok) {
    // A frame the frame_rate grid repeats goes out once per point, the same bytes each time.
    for (int64_t repeat = 0; repeat < frame.times.count && ok; ++repeat) {
      ok = WriteJpegs(result, frame.times.pts + repeat);
      if (ok) {
        if (frames_out_++ == 0) LogFirstFrame();
        last_pts_ = frame.times.pts + repeat;
      }
    }
    if (ok) {
      meter_.FrameDone(result);
      encode_seconds_ += std::chrono::duration<double>(result.times.done - result.times.started).count();
      handover_seconds_ += std::chrono::duration<double>(frame.handed_over - result.times.done).count();
      queue_seconds_ += std::chrono::duration<double>(result.times.started - result.times.submitted).count();
      const auto now = std::chrono::steady_clock::now();
      if (now - last_progress_ >= std::chrono::seconds(1)) {
        last_progress_ = now;
        v1::TranscodeResponse r;
        r.mutable_progress()->set_frames_in(frames_in_.load());
        r.mutable_progress()->set_frames_out(frames_out_.load());
        r.mutable_progress()->set_fps(frames_out_.load() / std::chrono::duration<double>(now - started_).count());
        r.mutable_progress()->set_decode_errors(decode_errors_.load());
        r.mutable_progress()->set_frames_dropped(frames_dropped_.load());
        r.mutable_progress()->set_pts(last_pts_);
        Send(std::move(r));
      }
    }
  }
  // What it sent counts now (Send), so its reservation goes.
  DropUnsent(frame.reserved_bytes);
  FrameCompleted();
}

void Session::LogFirstFrame() const {
  const auto now = std::chrono::steady_clock::now();
  auto ms = [&](std::chrono::steady_clock::time_point t) {
    return t == std::chrono::steady_clock::time_point{} ? -1.0
                                                        : std::chrono::duration<double, std::milli>(t - started_).count();
  };
  spdlog::debug("session {}: first frame written at {:.1f} ms: input opened at {:.1f} ms ({:.1f} ms settling the "
                "hardware decoder, {:.1f} ms of it waiting for the decode device), first frame decoded at {:.1f} ms "
                "({:.1f} ms waiting for input, {:.1f} ms decoding)",
                id_, ms(now), ms(first_frame_.opened), first_frame_.settle_s * 1e3, first_frame_.settle_wait_s * 1e3,
                ms(first_frame_.decoded), first_frame_.demux_s * 1e3, first_frame_.decode_s * 1e3);
}

bool Session::WriteJpegs(const FrameResult& result, int64_t pts) {
  const uint64_t index = frames_out_.load();
  for (size_t i = 0; i < result.jpeg.size(); ++i) {
    const JpegBytes& jpeg = result.jpeg[i];
    if (!muxers_.empty()) {
      std::vector<uint8_t> scratch;  // the muxer takes one contiguous packet
      const uint8_t* image = jpeg.Contiguous(&scratch);
      std::lock_guard<std::mutex> lock(mux_mu_);
      const auto mux_start = std::chrono::steady_clock::now();
      Status s = muxers_[i]->WriteVideo(image, jpeg.size(), pts);
      meter_.Muxed(std::chrono::duration<double>(std::chrono::steady_clock::now() - mux_start).count());
      if (!s.ok()) {
        Fail(s.WithContext("mux rendition " + std::to_string(i)));
        return false;
      }
      continue;
    }
    SendJpeg(static_cast<uint32_t>(i), index, pts, jpeg);
    bytes_out_ += jpeg.size();
    meter_.BytesOut(jpeg.size());
  }
  return true;
}

void Session::SendJpeg(uint32_t rendition, uint64_t index, int64_t pts, const JpegBytes& jpeg) {
  v1::TranscodeResponse r;
  v1::OutputPacket* p = r.mutable_packet();
  p->set_rendition(rendition);
  p->set_frame_index(index);
  p->set_pts(pts);
  int slot = -1;
  uint8_t* to = nullptr;
  if (job_.output_shared_slots > 0) {  // no lock on the messages-only path
    std::lock_guard<std::mutex> lock(state_mu_);
    if (shared_out_ && jpeg.size() <= shared_out_->slot_bytes()) slot = shared_out_->Take();
    if (slot >= 0) to = shared_out_->slot(slot);
  }
  if (slot >= 0) {
    // The slot is this thread's until the packet naming it reaches the client.
    jpeg.CopyRange(0, jpeg.size(), to);
    p->mutable_shared()->set_slot(static_cast<uint32_t>(slot));
    p->mutable_shared()->set_size(jpeg.size());
    p->set_end_of_frame(true);
    {
      std::lock_guard<std::mutex> lock(state_mu_);
      shared_out_->MarkSent(slot);
    }
    Send(std::move(r));
    return;
  }
  size_t offset = 0;
  do {
    const size_t n = std::min(options_.message_bytes, jpeg.size() - offset);
    v1::TranscodeResponse part = r;  // the header fields; data follows
    v1::OutputPacket* q = part.mutable_packet();
    jpeg.AppendRangeTo(offset, n, q->mutable_data());
    offset += n;
    q->set_end_of_frame(offset == jpeg.size());
    Send(std::move(part));
  } while (offset < jpeg.size());
}

Status Session::ReleaseOutputSlot(uint32_t slot) {
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    if (!shared_out_) {
      return InvalidArgument("output_slot_released: this job's JPEGs come in OutputPacket.data "
                             "(spec.output.frames.shared_memory_slots is 0)");
    }
    RETURN_IF_ERROR(shared_out_->Release(slot));
  }
  Touch();
  return OkStatus();
}

void Session::OnSent(size_t bytes) {
  DropUnsent(bytes);
  Touch();
}

void Session::Send(v1::TranscodeResponse response) {
  const size_t payload_bytes = PayloadBytes(response);
  AddUnsent(payload_bytes);
  std::lock_guard<std::mutex> lock(sink_mu_);
  if (sink_ != nullptr && !closed_) {
    sink_->Send(std::move(response));
    return;
  }
  DropUnsent(payload_bytes);
}

}  // namespace conveyor
