// Test media, the libjpeg reference encoder and measures for the conformance suite (see
// conformance_util.h); the decoders are in conformance_decoders.cpp.
#include "conformance_util.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include <jpeglib.h>
#include <turbojpeg.h>

#include "test_process.h"

extern char** environ;

namespace conformance {

using conveyor::FailedPrecondition;
using conveyor::Internal;
using conveyor::OkStatus;
using conveyor::PixelFormat;
using conveyor::Status;
using conveyor::StatusOr;
using conveyor::Subsampling;

namespace {

constexpr const char* kFfmpeg = "/usr/bin/ffmpeg";

// ---------------------------------------------------------------------------------------
// RAII for every C handle used here.

struct CompressDeleter {
  void operator()(jpeg_compress_struct* c) const {
    jpeg_destroy_compress(c);
    delete c;
  }
};
using CompressPtr = std::unique_ptr<jpeg_compress_struct, CompressDeleter>;

struct SpawnActionsDeleter {
  void operator()(posix_spawn_file_actions_t* a) const {
    posix_spawn_file_actions_destroy(a);
    delete a;
  }
};

StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Internal("cannot open " + path);
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return data;
}

std::string& TempDirStorage() {
  static std::string dir;
  return dir;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Test media

const std::string& TempDir() {
  std::string& dir = TempDirStorage();
  if (dir.empty()) {
    dir = conveyor::testing::MakeTempDir("conveyor-conformance");
    if (dir.empty()) {
      std::perror("mkdtemp");
      std::abort();
    }
  }
  return dir;
}

void RemoveTempDir() {
  std::string& dir = TempDirStorage();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  dir.clear();
}

const char* ContentName(Content c) {
  switch (c) {
    case Content::kTestsrc2: return "testsrc2";
    case Content::kTestsrc2Noise: return "testsrc2+noise";
    case Content::kMandelbrot: return "mandelbrot";
    case Content::kGradients: return "gradients";
    case Content::kSmpteBars: return "smptehdbars";
  }
  return "unknown";
}

Status RunFfmpeg(const std::vector<std::string>& args) {
  if (access(kFfmpeg, X_OK) != 0) return FailedPrecondition(std::string(kFfmpeg) + " is missing");
  const std::string log_path = TempDir() + "/ffmpeg.log";

  std::vector<std::string> full = {kFfmpeg, "-nostdin", "-hide_banner", "-loglevel", "error"};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::unique_ptr<posix_spawn_file_actions_t, SpawnActionsDeleter> actions(
      new posix_spawn_file_actions_t);
  posix_spawn_file_actions_init(actions.get());
  posix_spawn_file_actions_addopen(actions.get(), 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(actions.get(), 1, log_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(actions.get(), 1, 2);

  pid_t pid = 0;
  const int rc = posix_spawn(&pid, kFfmpeg, actions.get(), nullptr, argv.data(), environ);
  if (rc != 0) return Internal(std::string("posix_spawn ffmpeg: ") + std::strerror(rc));
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return Internal(std::string("waitpid: ") + std::strerror(errno));
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return OkStatus();

  std::string cmd;
  for (const auto& a : full) cmd += a + " ";
  std::string log;
  if (auto data = ReadFile(log_path); data.ok()) log.assign(data->begin(), data->end());
  return Internal("ffmpeg failed (status " + std::to_string(wstatus) + "): " + cmd + "\n" + log);
}

namespace {

std::string RgbPath(Content content, int width, int height) {
  std::string name = ContentName(content);
  for (char& ch : name) {
    if (ch == '+') ch = '_';
  }
  return TempDir() + "/" + name + "_" + std::to_string(width) + "x" + std::to_string(height) +
         ".rgb";
}

// The lavfi source graph for `content` at a size every source accepts (some, like
// testsrc2, silently round odd sizes or refuse tiny ones); the frame is then cropped to
// the exact size in rgb24.
std::string SourceGraph(Content content, int gen_w, int gen_h) {
  const std::string size = "size=" + std::to_string(gen_w) + "x" + std::to_string(gen_h);
  switch (content) {
    case Content::kTestsrc2: return "testsrc2=" + size + ":rate=1";
    case Content::kTestsrc2Noise: return "testsrc2=" + size + ":rate=1,noise=alls=20:allf=t";
    case Content::kMandelbrot: return "mandelbrot=" + size + ":rate=1";
    // Explicit colours: "random" (the default) draws from av_get_random_seed whatever
    // the seed option says, so the picture would change from run to run.
    case Content::kGradients:
      return "gradients=" + size +
             ":rate=1:nb_colors=4:c0=0x1f4fb0:c1=0xe8c040:c2=0x30a060:c3=0xc02870:seed=1";
    case Content::kSmpteBars: return "smptehdbars=" + size + ":rate=1";
  }
  return "";
}

}  // namespace

StatusOr<std::vector<uint8_t>> RenderRgb(Content content, int width, int height) {
  static std::map<std::tuple<int, int, int>, std::vector<uint8_t>> cache;
  const auto key = std::make_tuple(static_cast<int>(content), width, height);
  if (auto it = cache.find(key); it != cache.end()) return it->second;

  const int gen_w = std::max(64, width + (width & 1));
  const int gen_h = std::max(64, height + (height & 1));
  const std::string crop = "format=rgb24,crop=" + std::to_string(width) + ":" +
                           std::to_string(height) + ":" + std::to_string((gen_w - width) / 2) +
                           ":" + std::to_string((gen_h - height) / 2);
  const std::string path = RgbPath(content, width, height);
  RETURN_IF_ERROR(RunFfmpeg({"-f", "lavfi", "-i", SourceGraph(content, gen_w, gen_h), "-frames:v",
                             "1", "-vf", crop, "-pix_fmt", "rgb24", "-f", "rawvideo", "-y",
                             path}));
  ASSIGN_OR_RETURN(std::vector<uint8_t> data, ReadFile(path));
  const size_t want = static_cast<size_t>(width) * height * 3;
  if (data.size() != want) {
    return Internal("ffmpeg rendered " + std::to_string(data.size()) + " bytes of " +
                    ContentName(content) + ", expected " + std::to_string(want));
  }
  cache.emplace(key, data);
  return data;
}

StatusOr<std::vector<uint8_t>> ConvertRgb(Content content, int width, int height,
                                          const std::string& filter, PixelFormat format) {
  ASSIGN_OR_RETURN(std::vector<uint8_t> rgb, RenderRgb(content, width, height));
  (void)rgb;  // RenderRgb left the raw file at RgbPath()
  const std::string out = TempDir() + "/converted." + conveyor::PixelFormatName(format);
  const std::string size = std::to_string(width) + "x" + std::to_string(height);
  RETURN_IF_ERROR(RunFfmpeg({"-f", "rawvideo", "-pix_fmt", "rgb24", "-s", size, "-i",
                             RgbPath(content, width, height), "-frames:v", "1", "-vf", filter,
                             "-pix_fmt", conveyor::PixelFormatName(format), "-f", "rawvideo",
                             "-y", out}));
  ASSIGN_OR_RETURN(std::vector<uint8_t> data, ReadFile(out));
  std::filesystem::remove(out);
  const size_t want = conveyor::PackedFrameSize(format, width, height);
  if (data.size() != want) {
    return Internal(std::string("ffmpeg wrote ") + std::to_string(data.size()) + " bytes of " +
                    conveyor::PixelFormatName(format) + ", expected " + std::to_string(want));
  }
  return data;
}

// ---------------------------------------------------------------------------------------
// libjpeg reference encoder

namespace {

struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void ErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Appends the compressed stream to a vector in 64 KiB chunks.
struct VectorDestination {
  jpeg_destination_mgr pub;
  std::vector<uint8_t>* out;
  JOCTET chunk[1 << 16];
};

void InitDestination(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<VectorDestination*>(cinfo->dest);
  d->pub.next_output_byte = d->chunk;
  d->pub.free_in_buffer = sizeof(d->chunk);
}

boolean EmptyOutputBuffer(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<VectorDestination*>(cinfo->dest);
  d->out->insert(d->out->end(), d->chunk, d->chunk + sizeof(d->chunk));
  d->pub.next_output_byte = d->chunk;
  d->pub.free_in_buffer = sizeof(d->chunk);
  return TRUE;
}

void TermDestination(j_compress_ptr cinfo) {
  auto* d = reinterpret_cast<VectorDestination*>(cinfo->dest);
  d->out->insert(d->out->end(), d->chunk, d->chunk + (sizeof(d->chunk) - d->pub.free_in_buffer));
}

}  // namespace

StatusOr<std::vector<uint8_t>> LibjpegEncodeRgb(const uint8_t* rgb, int width, int height,
                                                int quality, Subsampling s, int restart_mcus) {
  // Everything with a destructor is constructed before setjmp, so a longjmp out of
  // libjpeg skips no C++ destructor.
  std::vector<uint8_t> out;
  auto dest = std::make_unique<VectorDestination>();
  auto err = std::make_unique<ErrorManager>();
  CompressPtr cinfo(new jpeg_compress_struct());
  std::vector<JSAMPROW> rows(height);
  for (int y = 0; y < height; ++y) {
    rows[y] = const_cast<JSAMPROW>(rgb + static_cast<size_t>(y) * width * 3);
  }

  cinfo->err = jpeg_std_error(&err->pub);
  err->pub.error_exit = ErrorExit;
  if (setjmp(err->jump)) {
    return Internal(std::string("libjpeg: ") + err->message);
  }
  jpeg_create_compress(cinfo.get());

  dest->out = &out;
  dest->pub.init_destination = InitDestination;
  dest->pub.empty_output_buffer = EmptyOutputBuffer;
  dest->pub.term_destination = TermDestination;
  cinfo->dest = &dest->pub;

  cinfo->image_width = static_cast<JDIMENSION>(width);
  cinfo->image_height = static_cast<JDIMENSION>(height);
  cinfo->input_components = 3;
  cinfo->in_color_space = JCS_RGB;
  jpeg_set_defaults(cinfo.get());
  jpeg_set_quality(cinfo.get(), quality, TRUE);
  cinfo->dct_method = JDCT_ISLOW;
  cinfo->optimize_coding = FALSE;
  cinfo->restart_interval = static_cast<unsigned int>(restart_mcus);
  cinfo->comp_info[0].h_samp_factor = s == Subsampling::k444 ? 1 : 2;
  cinfo->comp_info[0].v_samp_factor = s == Subsampling::k420 ? 2 : 1;
  for (int c = 1; c < 3; ++c) {
    cinfo->comp_info[c].h_samp_factor = 1;
    cinfo->comp_info[c].v_samp_factor = 1;
  }

  jpeg_start_compress(cinfo.get(), TRUE);
  while (cinfo->next_scanline < cinfo->image_height) {
    jpeg_write_scanlines(cinfo.get(), &rows[cinfo->next_scanline],
                         cinfo->image_height - cinfo->next_scanline);
  }
  jpeg_finish_compress(cinfo.get());
  return out;
}

// ---------------------------------------------------------------------------------------
// Measures

double Psnr(const uint8_t* a, const uint8_t* b, size_t n) {
  if (n == 0) return -1.0;
  uint64_t sse = 0;
  for (size_t i = 0; i < n; ++i) {
    const int d = static_cast<int>(a[i]) - static_cast<int>(b[i]);
    sse += static_cast<uint64_t>(d * d);
  }
  if (sse == 0) return std::numeric_limits<double>::infinity();
  const double mse = static_cast<double>(sse) / static_cast<double>(n);
  return 10.0 * std::log10(255.0 * 255.0 / mse);
}

int MaxAbsDiff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return 256;
  int m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(int(a[i]) - int(b[i])));
  return m;
}

std::vector<uint8_t> CropPlane(const Planes& p, int c, int w, int h) {
  std::vector<uint8_t> out;
  if (w > p.plane_w[c] || h > p.plane_h[c]) return out;
  out.reserve(static_cast<size_t>(w) * h);
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = p.plane[c].data() + static_cast<size_t>(y) * p.plane_w[c];
    out.insert(out.end(), row, row + w);
  }
  return out;
}

std::vector<uint8_t> JfifLuma(const std::vector<uint8_t>& rgb) {
  std::vector<uint8_t> y(rgb.size() / 3);
  for (size_t i = 0; i < y.size(); ++i) {
    const double v = 0.299 * rgb[3 * i] + 0.587 * rgb[3 * i + 1] + 0.114 * rgb[3 * i + 2];
    y[i] = static_cast<uint8_t>(std::lround(std::min(255.0, v)));
  }
  return y;
}

int TurboSubsampOf(Subsampling s) {
  switch (s) {
    case Subsampling::k420: return TJSAMP_420;
    case Subsampling::k422: return TJSAMP_422;
    case Subsampling::k444: return TJSAMP_444;
  }
  return -1;
}

StreamLayout ParseStream(const std::vector<uint8_t>& j) {
  StreamLayout s;
  const size_t n = j.size();
  auto fail = [&](const std::string& why, size_t at) {
    s.ok = false;
    s.error = why + " at byte " + std::to_string(at);
    return s;
  };
  if (n < 4 || j[0] != 0xFF || j[1] != 0xD8) return fail("no SOI", 0);
  size_t p = 2;
  // Marker segments up to and including SOS.
  for (;;) {
    if (p + 4 > n) return fail("truncated header", p);
    if (j[p] != 0xFF) return fail("expected a marker", p);
    const uint8_t m = j[p + 1];
    const size_t len = static_cast<size_t>(j[p + 2]) << 8 | j[p + 3];
    if (len < 2 || p + 2 + len > n) return fail("bad segment length", p);
    const uint8_t* seg = &j[p + 4];
    if (m == 0xDD) {
      if (len != 4) return fail("DRI length", p);
      s.dri = seg[0] << 8 | seg[1];
    } else if (m == 0xC0) {
      if (len < 8 + 3 * 3) return fail("SOF0 length", p);
      s.sof_height = seg[1] << 8 | seg[2];
      s.sof_width = seg[3] << 8 | seg[4];
      if (seg[5] != 3) return fail("SOF0 component count", p);
      for (int c = 0; c < 3; ++c) s.sof_sampling[c] = seg[6 + 3 * c + 1];
    } else if (m >= 0xC1 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      return fail("non-baseline SOF", p);
    }
    p += 2 + len;
    if (m == 0xDA) break;
  }
  // Entropy-coded data: stuffed bytes, RST markers, then EOI.
  while (p < n) {
    if (j[p] != 0xFF) {
      ++p;
      continue;
    }
    if (p + 1 >= n) return fail("0xFF at end of stream", p);
    const uint8_t m = j[p + 1];
    if (m == 0x00) {
      p += 2;
    } else if (m >= 0xD0 && m <= 0xD7) {
      s.rst.push_back(m - 0xD0);
      p += 2;
    } else if (m == 0xFF) {
      ++p;  // fill byte
    } else if (m == 0xD9) {
      s.eoi_at_end = p + 2 == n;
      s.ok = true;
      return s;
    } else {
      return fail("unexpected marker 0xFF" + std::to_string(m) + " in scan data", p);
    }
  }
  return fail("no EOI", n);
}

}  // namespace conformance
