// conveyorctl transcode's options into a JobSpec: BuildJobSpec, ParseRendition and
// ParseRawInput (declared in transcode_command.h) are defined in transcode_job_spec.cpp,
// with the proto's pixel formats, which the input writer reads back from the spec.
#pragma once

#include "conveyor/v1/transcoder.pb.h"
#include "frame.h"
#include "status.h"

namespace conveyor::ctl {

// The PixelFormat a JobSpec's pixel format names; INVALID_ARGUMENT for UNSPECIFIED.
StatusOr<PixelFormat> PixelFormatFromProto(v1::PixelFormat f);

}  // namespace conveyor::ctl
