// The moov a plain MOV gets when it moves to the front of the file, as the ffmpeg CLI's
// `-movflags +faststart` moves it. Putting moov before mdat pushes every sample on by
// the moov's own size, so each chunk offset (stco, co64) grows by that size. A 32-bit
// table (stco) whose offsets would then pass 4 GiB becomes a 64-bit one (co64), which
// makes the moov larger and the shift with it, as FFmpeg's movenc does in its
// compute_moov_size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "status.h"

namespace conveyor::media {

// `moov`: one whole moov box, as written after mdat. Returns the moov to write in front
// of the boxes that followed ftyp: its chunk offsets moved on by its own size.
StatusOr<std::vector<uint8_t>> MoovForTheFront(const uint8_t* moov, size_t size);

// `moov` with every chunk offset moved on by `delta`, a stco table turned into co64
// where an offset would not fit 32 bits. The boxes that hold a changed table get their
// new sizes; every other byte is copied.
StatusOr<std::vector<uint8_t>> ShiftChunkOffsets(const uint8_t* moov, size_t size, uint64_t delta);

}  // namespace conveyor::media
