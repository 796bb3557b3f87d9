// MoovForTheFront: walks moov -> trak -> mdia -> minf -> stbl, rewrites the chunk offset
// tables and copies every other box as it is.
#include "mov_faststart.h"

#include <cstring>
#include <limits>
#include <string>

namespace conveyor::media {
namespace {

uint32_t Be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
uint64_t Be64(const uint8_t* p) { return (uint64_t{Be32(p)} << 32) | Be32(p + 4); }

void PutBe32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<uint8_t>(v >> shift));
}
void PutBe64(std::vector<uint8_t>& out, uint64_t v) {
  PutBe32(out, static_cast<uint32_t>(v >> 32));
  PutBe32(out, static_cast<uint32_t>(v));
}
void SetBe32(std::vector<uint8_t>& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

bool TypeIs(const uint8_t* type, const char* name) { return std::memcmp(type, name, 4) == 0; }

// The boxes on the way from moov to the chunk offset tables.
bool HoldsChunkOffsets(const uint8_t* type) {
  for (const char* name : {"moov", "trak", "mdia", "minf", "stbl"}) {
    if (TypeIs(type, name)) return true;
  }
  return false;
}

Status Malformed(const std::string& what) { return Internal("moov for +faststart: " + what); }

// A chunk offset table (stco or co64: version and flags, entry count, entries) moved on
// by delta, written as stco where every offset fits 32 bits and as co64 otherwise.
Status ShiftTable(const uint8_t* type, const uint8_t* body, uint64_t size, uint64_t delta,
                  std::vector<uint8_t>& out) {
  const bool wide = TypeIs(type, "co64");
  const uint64_t entry_bytes = wide ? 8 : 4;
  if (size < 8) return Malformed(std::string(reinterpret_cast<const char*>(type), 4) + " shorter than its header");
  const uint64_t count = Be32(body + 4);
  if (count > (size - 8) / entry_bytes) {
    return Malformed(std::string(reinterpret_cast<const char*>(type), 4) + " holds fewer entries than it counts");
  }
  std::vector<uint64_t> offsets(count);
  bool fits32 = !wide;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* e = body + 8 + i * entry_bytes;
    const uint64_t offset = wide ? Be64(e) : Be32(e);
    if (offset > std::numeric_limits<uint64_t>::max() - delta) return Malformed("a chunk offset overflows");
    offsets[i] = offset + delta;
    if (offsets[i] > std::numeric_limits<uint32_t>::max()) fits32 = false;
  }
  const uint64_t out_size = 8 + 8 + count * (fits32 ? 4 : 8);
  if (out_size > std::numeric_limits<uint32_t>::max()) return Malformed("a chunk offset table over 4 GiB");
  PutBe32(out, static_cast<uint32_t>(out_size));
  out.insert(out.end(), fits32 ? "stco" : "co64", (fits32 ? "stco" : "co64") + 4);
  out.insert(out.end(), body, body + 8);  // version, flags, entry count
  for (uint64_t offset : offsets) {
    if (fits32) {
      PutBe32(out, static_cast<uint32_t>(offset));
    } else {
      PutBe64(out, offset);
    }
  }
  return OkStatus();
}

// The boxes in [data, data + size), rewritten into out.
Status ShiftBoxes(const uint8_t* data, uint64_t size, uint64_t delta, int depth, std::vector<uint8_t>& out) {
  if (depth > 8) return Malformed("boxes nested too deep");
  uint64_t at = 0;
  while (at < size) {
    if (size - at < 8) return Malformed("a box header cut short");
    const uint8_t* box = data + at;
    uint64_t box_size = Be32(box);
    uint64_t header = 8;
    if (box_size == 1) {
      if (size - at < 16) return Malformed("a box header cut short");
      box_size = Be64(box + 8);
      header = 16;
    } else if (box_size == 0) {
      box_size = size - at;  // to the end of its parent
    }
    if (box_size < header || box_size > size - at) return Malformed("a box runs past its parent");
    const uint8_t* type = box + 4;
    const uint8_t* body = box + header;
    const uint64_t body_size = box_size - header;
    if (TypeIs(type, "stco") || TypeIs(type, "co64")) {
      RETURN_IF_ERROR(ShiftTable(type, body, body_size, delta, out));
    } else if (HoldsChunkOffsets(type)) {
      const size_t start = out.size();
      PutBe32(out, 0);  // the size, once the children are written
      out.insert(out.end(), type, type + 4);
      RETURN_IF_ERROR(ShiftBoxes(body, body_size, delta, depth + 1, out));
      const uint64_t written = out.size() - start;
      if (written > std::numeric_limits<uint32_t>::max()) return Malformed("a box over 4 GiB");
      SetBe32(out, start, static_cast<uint32_t>(written));
    } else {
      out.insert(out.end(), box, box + box_size);
    }
    at += box_size;
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<uint8_t>> ShiftChunkOffsets(const uint8_t* moov, size_t size, uint64_t delta) {
  if (moov == nullptr || size < 8 || !TypeIs(moov + 4, "moov")) {
    return Malformed("not a moov box (" + std::to_string(size) + " bytes)");
  }
  std::vector<uint8_t> out;
  out.reserve(size + size / 4);
  RETURN_IF_ERROR(ShiftBoxes(moov, size, delta, 0, out));
  if (out.size() < 8 || !TypeIs(out.data() + 4, "moov") || Be32(out.data()) != out.size()) {
    return Malformed("more than one moov box");
  }
  return out;
}

StatusOr<std::vector<uint8_t>> MoovForTheFront(const uint8_t* moov, size_t size) {
  // The shift is the moov's size after the shift. A table turned into co64 only grows
  // the moov, and a larger shift never turns one back, so this settles within a pass
  // for each table. (co64 stays co64, as FFmpeg reads it, even where 32 bits would do.)
  uint64_t delta = size;
  for (int pass = 0; pass < 64; ++pass) {
    ASSIGN_OR_RETURN(std::vector<uint8_t> out, ShiftChunkOffsets(moov, size, delta));
    if (out.size() == delta) return out;
    delta = out.size();  // a table widened (or the first pass dropped a 64-bit box size)
  }
  return Malformed("its size did not settle");
}

}  // namespace conveyor::media
