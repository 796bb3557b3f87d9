// What the ffmpeg CLI's autorotate (FFmpeg 5.1, fftools/ffmpeg_filter.c) makes of a
// stream's display matrix: the turn and mirror of the decoded pixels for display, as one
// of the eight orientations the orientation stage runs (stage_orient.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "stage_orient.h"

namespace conveyor::media {

struct DisplayOrientation {
  Orientation orientation;
  int rotation_degrees = 0;  // the matrix's clockwise rotation, rounded to a degree, in [0, 360)
  // A rotation that is not a multiple of 90 degrees: the CLI would insert its rotate
  // filter, which this stage does not run; the orientation is then identity.
  bool odd_angle = false;
};

// `matrix`: the 3x3 display matrix (nine int32, 16.16 and 2.30 fixed point) as FFmpeg's
// side data holds it; null or short: no matrix, identity.
DisplayOrientation DisplayOrientationOf(const uint8_t* matrix, size_t size);

// A display matrix that DisplayOrientationOf reads back as `o`: a clockwise rotation,
// horizontally flipped for the mirrored orientations (av_display_rotation_set,
// av_display_matrix_flip).
void DisplayMatrixOf(Orientation o, int32_t matrix[9]);

}  // namespace conveyor::media
