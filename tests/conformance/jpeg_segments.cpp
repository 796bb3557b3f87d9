#include "jpeg_segments.h"

#include <cstddef>

namespace conformance {
namespace {

JpegSegments Fail(JpegSegments s, const std::string& why, size_t at) {
  s.ok = false;
  s.error = why + " at byte " + std::to_string(at);
  return s;
}

// DQT: Pq|Tq, then 64 entries of 1 (Pq 0) or 2 (Pq 1) bytes, repeated.
bool ReadDqt(const uint8_t* p, size_t n, std::map<int, std::vector<uint8_t>>* out) {
  while (n > 0) {
    const size_t size = 1 + 64 * ((p[0] >> 4) == 0 ? 1 : 2);
    if (n < size || out->count(p[0] & 15)) return false;
    (*out)[p[0] & 15].assign(p + 1, p + size);
    p += size;
    n -= size;
  }
  return true;
}

// DHT: Tc|Th, 16 counts, then as many symbols as the counts add up to, repeated.
bool ReadDht(const uint8_t* p, size_t n, std::map<int, std::vector<uint8_t>>* out) {
  while (n > 0) {
    if (n < 17) return false;
    size_t symbols = 0;
    for (int i = 1; i <= 16; ++i) symbols += p[i];
    const size_t size = 17 + symbols;
    if (n < size || out->count(p[0])) return false;
    (*out)[p[0]].assign(p + 1, p + size);
    p += size;
    n -= size;
  }
  return true;
}

std::string CompareBytes(const std::string& what, const std::vector<uint8_t>& a,
                         const std::vector<uint8_t>& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i == a.size() && i == b.size()) return "";
  return what + ": byte " + std::to_string(i) + " of " + std::to_string(a.size()) + " and " +
         std::to_string(b.size());
}

std::string CompareTables(const char* what, const std::map<int, std::vector<uint8_t>>& a,
                          const std::map<int, std::vector<uint8_t>>& b) {
  for (const auto& [id, bytes] : a) {
    auto it = b.find(id);
    const std::string name = std::string(what) + " table " + std::to_string(id >> 4) + "/" +
                             std::to_string(id & 15);
    if (it == b.end()) return name + " only on one side";
    if (std::string d = CompareBytes(name, bytes, it->second); !d.empty()) return d;
  }
  if (a.size() != b.size()) return std::string(what) + ": " + std::to_string(a.size()) +
                                    " tables against " + std::to_string(b.size());
  return "";
}

}  // namespace

JpegSegments SplitJpeg(const std::vector<uint8_t>& j) {
  JpegSegments s;
  const size_t n = j.size();
  if (n < 4 || j[0] != 0xFF || j[1] != 0xD8) return Fail(s, "no SOI", 0);
  size_t p = 2;
  for (;;) {
    if (p + 4 > n || j[p] != 0xFF) return Fail(s, "expected a marker segment", p);
    const uint8_t m = j[p + 1];
    const size_t len = static_cast<size_t>(j[p + 2]) << 8 | j[p + 3];
    if (len < 2 || p + 2 + len > n) return Fail(s, "bad segment length", p);
    const uint8_t* seg = &j[p + 4];
    const size_t seg_n = len - 2;
    if (m == 0xDB && !ReadDqt(seg, seg_n, &s.dqt)) return Fail(s, "bad or repeated DQT", p);
    if (m == 0xC4 && !ReadDht(seg, seg_n, &s.dht)) return Fail(s, "bad or repeated DHT", p);
    if (m == 0xC0) s.sof.assign(seg, seg + seg_n);
    if (m == 0xDD) {
      if (seg_n != 2) return Fail(s, "DRI length", p);
      s.dri = seg[0] << 8 | seg[1];
    }
    p += 2 + len;
    if (m == 0xDA) {
      s.sos.assign(seg, seg + seg_n);
      break;
    }
  }
  if (n < p + 2 || j[n - 2] != 0xFF || j[n - 1] != 0xD9) return Fail(s, "no EOI at the end", n);
  s.scan.assign(j.begin() + static_cast<std::ptrdiff_t>(p), j.end() - 2);
  s.ok = true;
  return s;
}

std::string TableDifference(const JpegSegments& a, const JpegSegments& b) {
  std::string d = CompareTables("DQT", a.dqt, b.dqt);
  return d.empty() ? CompareTables("DHT", a.dht, b.dht) : d;
}

std::string FirstDifference(const JpegSegments& a, const JpegSegments& b) {
  for (std::string d : {TableDifference(a, b), CompareBytes("SOF0", a.sof, b.sof),
                        CompareBytes("SOS", a.sos, b.sos)}) {
    if (!d.empty()) return d;
  }
  if (a.dri != b.dri) return "DRI " + std::to_string(a.dri) + " against " + std::to_string(b.dri);
  return CompareBytes("entropy-coded data", a.scan, b.scan);
}

}  // namespace conformance
