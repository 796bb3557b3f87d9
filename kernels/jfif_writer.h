// The bytes around the entropy-coded data: SOI, JFIF APP0, Exif APP1 (an orientation
// only, when the plan has one), DQT, SOF0, DHT, DRI and SOS before it, EOI after. Written
// on the host for both workers.
#pragma once

#include <cstdint>
#include <vector>

#include "encode_plan.h"

namespace conveyor {

void AppendJfifHeader(const EncodePlan& plan, std::vector<uint8_t>* out);
void AppendJfifTrailer(std::vector<uint8_t>* out);

}  // namespace conveyor
