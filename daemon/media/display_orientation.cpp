// DisplayOrientationOf (see display_orientation.h): the CLI's choice of transpose, hflip
// and vflip filters for each rotation, read off as a transpose and two flips.
#include "display_orientation.h"

#include <cmath>

extern "C" {
#include <libavutil/display.h>
}

namespace conveyor::media {

DisplayOrientation DisplayOrientationOf(const uint8_t* matrix, size_t size) {
  DisplayOrientation d;
  if (matrix == nullptr || size < 9 * sizeof(int32_t)) return d;
  const int32_t* m = reinterpret_cast<const int32_t*>(matrix);
  const double ccw = av_display_rotation_get(m);
  if (std::isnan(ccw)) return d;
  // The CLI's get_rotation(): the clockwise angle, rounded, brought into [0, 360).
  double theta = -std::round(ccw);
  theta -= 360 * std::floor(theta / 360 + 0.9 / 360);
  d.rotation_degrees = static_cast<int>(std::lround(theta)) % 360;
  Orientation& o = d.orientation;
  if (std::fabs(theta - 90) < 1.0) {
    o.transpose = true;  // transpose=cclock_flip (a mirrored matrix) or transpose=clock
    o.flip_y = !(m[3] > 0);
  } else if (std::fabs(theta - 180) < 1.0) {
    o.flip_x = m[0] < 0;  // hflip
    o.flip_y = m[4] < 0;  // vflip
  } else if (std::fabs(theta - 270) < 1.0) {
    o.transpose = true;  // transpose=clock_flip (a mirrored matrix) or transpose=cclock
    o.flip_x = true;
    o.flip_y = m[3] < 0;
  } else if (std::fabs(theta) > 1.0) {
    d.odd_angle = true;
  } else {
    o.flip_y = m[4] < 0;  // vflip
  }
  return d;
}

void DisplayMatrixOf(Orientation o, int32_t matrix[9]) {
  // The eight matrices of a rotation by a multiple of 90 degrees, flipped or not, read
  // back as the eight orientations: take the one that reads back as `o`.
  for (int hflip = 0; hflip < 2; ++hflip) {
    for (int degrees = 0; degrees < 360; degrees += 90) {
      av_display_rotation_set(matrix, degrees);
      av_display_matrix_flip(matrix, hflip, 0);
      if (DisplayOrientationOf(reinterpret_cast<const uint8_t*>(matrix), 9 * sizeof(int32_t)).orientation == o) return;
    }
  }
  av_display_rotation_set(matrix, 0);  // unreachable: every orientation has its matrix
}

}  // namespace conveyor::media
