// What the transcode end-to-end tests share (transcode_test.cpp, transcode_flow_test.cpp):
// their media, made once per run with the ffmpeg CLI, the job specs they send, and a
// libjpeg-turbo decode of the JPEGs that come back.
#pragma once

#include <signal.h>
#include <turbojpeg.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cpu_encoder.h"
#include "daemon_process.h"
#include "test_files.h"
#include "daemon_suite.h"
#include "synthetic_frame.h"
#include "transcode_client.h"

namespace conveyor::e2e::transcode_media {

inline std::string g_media;  // generated once per run

inline void MakeMedia() {
  if (!g_media.empty()) return;
  g_media = MakeTempDir();
  const std::string lavfi = "ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=25 ";
  ASSERT_EQ(Shell(lavfi + "-frames:v 12 -c:v libx264 -pix_fmt yuv420p " + g_media + "/h264.mkv"), 0);
  ASSERT_EQ(Shell(lavfi + "-f lavfi -i sine=frequency=440:sample_rate=48000 -frames:v 12 -t 0.48 -c:v libx264 "
                          "-pix_fmt yuv420p -c:a aac " + g_media + "/av.mkv"), 0);
  // ffmpeg writes moov after mdat unless told otherwise.
  ASSERT_EQ(Shell(lavfi + "-frames:v 12 -c:v libx264 -pix_fmt yuv420p " + g_media + "/moov_at_end.mp4"), 0);
  // The same layout with an mdat of a few MB (noise, lossless): past what the demuxer's
  // buffer and a short forward read cover, so reading it takes requests.
  ASSERT_EQ(Shell("ffmpeg -loglevel error -y -f lavfi -i testsrc2=size=320x240:rate=25,noise=alls=40:allf=t "
                  "-frames:v 30 -c:v libx264 -preset ultrafast -qp 0 " + g_media + "/moov_at_end_big.mp4"),
            0);
  ASSERT_EQ(Shell("head -c 65536 /dev/urandom > " + g_media + "/garbage.bin"), 0);
}

struct JpegInfo {
  bool ok = false;
  int width = 0, height = 0;
};

// Decodes the whole JPEG with libjpeg-turbo.
inline JpegInfo DecodeJpeg(const std::vector<uint8_t>& jpeg) {
  JpegInfo info;
  tjhandle tj = tjInitDecompress();
  int subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, jpeg.data(), jpeg.size(), &info.width, &info.height, &subsamp, &colorspace) == 0) {
    std::vector<uint8_t> rgb(static_cast<size_t>(info.width) * info.height * 3);
    info.ok = tjDecompress2(tj, jpeg.data(), jpeg.size(), rgb.data(), info.width, 0, info.height, TJPF_RGB, 0) == 0;
  }
  tjDestroy(tj);
  return info;
}

inline v1::RenditionSpec* AddRendition(v1::JobSpec* spec, int w, int h, int quality = 85) {
  v1::RenditionSpec* r = spec->add_renditions();
  r->set_width(w);
  r->set_height(h);
  r->set_quality(quality);
  return r;
}

inline v1::JobSpec ContainerSpec() {
  v1::JobSpec spec;
  spec.mutable_container();
  return spec;
}

inline v1::JobSpec RawSpec(v1::PixelFormat format, int w, int h) {
  v1::JobSpec spec;
  v1::RawInput* raw = spec.mutable_raw();
  raw->set_pixel_format(format);
  raw->set_width(w);
  raw->set_height(h);
  raw->mutable_frame_rate()->set_num(30);
  raw->mutable_frame_rate()->set_den(1);
  raw->set_color_matrix(v1::COLOR_MATRIX_BT709);
  return spec;
}

}  // namespace conveyor::e2e::transcode_media
