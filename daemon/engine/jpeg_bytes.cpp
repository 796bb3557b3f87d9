#include "jpeg_bytes.h"

#include <algorithm>
#include <cstring>

namespace conveyor {

JpegBytes::JpegBytes(std::vector<uint8_t> bytes) : owned_(std::move(bytes)) {
  if (!owned_.empty()) pieces_.push_back({nullptr, 0, owned_.size()});
  size_ = owned_.size();
}

void JpegBytes::AppendCopy(const uint8_t* data, size_t size) {
  if (size == 0) return;
  if (!pieces_.empty() && pieces_.back().lent == nullptr &&
      pieces_.back().owned_offset + pieces_.back().size == owned_.size()) {
    pieces_.back().size += size;  // extends the last owned piece
  } else {
    pieces_.push_back({nullptr, owned_.size(), size});
  }
  owned_.insert(owned_.end(), data, data + size);
  size_ += size;
}

void JpegBytes::AppendLent(const uint8_t* data, size_t size, std::shared_ptr<const void> lease) {
  if (size == 0) return;
  pieces_.push_back({data, 0, size});
  if (std::find(leases_.begin(), leases_.end(), lease) == leases_.end()) leases_.push_back(std::move(lease));
  size_ += size;
}

namespace {

// Calls sink(data, n) for the pieces' bytes from `offset` on, `count` in all.
template <class Sink>
void ForEachInRange(const JpegBytes& j, size_t offset, size_t count, Sink&& sink) {
  j.ForEachPiece([&](const uint8_t* data, size_t size) {
    if (count == 0) return;
    if (offset >= size) {
      offset -= size;
      return;
    }
    const size_t n = std::min(count, size - offset);
    sink(data + offset, n);
    count -= n;
    offset = 0;
  });
}

}  // namespace

void JpegBytes::CopyRange(size_t offset, size_t count, uint8_t* out) const {
  ForEachInRange(*this, offset, count, [&](const uint8_t* data, size_t n) {
    std::memcpy(out, data, n);
    out += n;
  });
}

void JpegBytes::AppendRangeTo(size_t offset, size_t count, std::string* out) const {
  out->reserve(out->size() + count);
  ForEachInRange(*this, offset, count,
                 [&](const uint8_t* data, size_t n) { out->append(reinterpret_cast<const char*>(data), n); });
}

std::vector<uint8_t> JpegBytes::ToVector() const {
  std::vector<uint8_t> v(size_);
  CopyRange(0, size_, v.data());
  return v;
}

const uint8_t* JpegBytes::Contiguous(std::vector<uint8_t>* scratch) const {
  if (pieces_.size() == 1) {
    const Piece& p = pieces_.front();
    return p.lent ? p.lent : owned_.data() + p.owned_offset;
  }
  *scratch = ToVector();
  return scratch->data();
}

bool operator==(const JpegBytes& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return false;
  size_t at = 0;
  bool same = true;
  a.ForEachPiece([&](const uint8_t* data, size_t size) {
    if (same && std::memcmp(data, b.data() + at, size) != 0) same = false;
    at += size;
  });
  return same;
}

}  // namespace conveyor
