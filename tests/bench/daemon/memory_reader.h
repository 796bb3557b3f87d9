// An AVIOContext's read position over a file already in memory, one per stream, so that
// many streams demux the same bytes at once (the libav* benches' inputs).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

extern "C" {
#include <libavformat/avio.h>
#include <libavutil/error.h>
}

namespace conveyor::bench {

struct MemoryReader {
  const std::vector<uint8_t>* data = nullptr;
  size_t pos = 0;

  static int Read(void* opaque, uint8_t* buf, int size) {
    auto* r = static_cast<MemoryReader*>(opaque);
    if (r->pos >= r->data->size()) return AVERROR_EOF;
    const size_t n = std::min(static_cast<size_t>(size), r->data->size() - r->pos);
    std::memcpy(buf, r->data->data() + r->pos, n);
    r->pos += n;
    return static_cast<int>(n);
  }

  static int64_t Seek(void* opaque, int64_t offset, int whence) {
    auto* r = static_cast<MemoryReader*>(opaque);
    const auto size = static_cast<int64_t>(r->data->size());
    int64_t to = 0;
    switch (whence & ~AVSEEK_FORCE) {
      case AVSEEK_SIZE: return size;
      case SEEK_SET: to = offset; break;
      case SEEK_CUR: to = static_cast<int64_t>(r->pos) + offset; break;
      case SEEK_END: to = size + offset; break;
      default: return AVERROR(EINVAL);
    }
    if (to < 0 || to > size) return AVERROR(EINVAL);
    r->pos = static_cast<size_t>(to);
    return to;
  }
};

}  // namespace conveyor::bench
