// One rendition's encoded JPEG as a worker hands it over: pieces in order, each either
// bytes the result owns (the CPU worker's whole image, the GPU worker's JFIF header and
// trailer, bands copied on the fallback path) or bytes in memory the worker lends (the
// GPU worker's pinned readback ring), held by a lease until the result is dropped. The
// GPU worker copies bands straight into that memory, so no host copy stands between the
// device and the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace conveyor {

class JpegBytes {
 public:
  JpegBytes() = default;
  explicit JpegBytes(std::vector<uint8_t> bytes);

  // Appends a copy of [data, data + size).
  void AppendCopy(const uint8_t* data, size_t size);
  // Room for `bytes` more owned bytes, so that copies appended band by band do not
  // move the ones before them.
  void ReserveOwned(size_t bytes) { owned_.reserve(owned_.size() + bytes); }
  // Appends [data, data + size) as it is: it must stay valid while `lease` (kept with
  // the others this result holds) is alive.
  void AppendLent(const uint8_t* data, size_t size, std::shared_ptr<const void> lease);

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Calls f(const uint8_t* data, size_t size) for each piece, in order.
  template <class F>
  void ForEachPiece(F&& f) const {
    for (const Piece& p : pieces_) f(p.lent ? p.lent : owned_.data() + p.owned_offset, p.size);
  }
  // Copies `count` bytes from `offset` on into `out`.
  void CopyRange(size_t offset, size_t count, uint8_t* out) const;
  // Appends `count` bytes from `offset` on to `out` (a message's bytes field: no
  // zero-filling first, as resizing and copying would).
  void AppendRangeTo(size_t offset, size_t count, std::string* out) const;
  std::vector<uint8_t> ToVector() const;
  // The bytes as one run: the single piece itself where there is one (the CPU worker's
  // image), else the pieces gathered into `scratch`.
  const uint8_t* Contiguous(std::vector<uint8_t>* scratch) const;

 private:
  struct Piece {
    const uint8_t* lent;  // null: owned_ from owned_offset on
    size_t owned_offset;
    size_t size;
  };
  std::vector<uint8_t> owned_;
  std::vector<Piece> pieces_;
  std::vector<std::shared_ptr<const void>> leases_;
  size_t size_ = 0;
};

bool operator==(const JpegBytes& a, const std::vector<uint8_t>& b);

}  // namespace conveyor
