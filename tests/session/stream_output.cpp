// Reassembly of a stream's responses and the JPEG check (see stream_output.h).
#include "stream_output.h"

#include <turbojpeg.h>

namespace conveyor::session_test {

StreamOutput Reassemble(const std::vector<v1::TranscodeResponse>& written, size_t renditions) {
  StreamOutput out;
  out.renditions.resize(renditions);
  std::vector<std::vector<uint8_t>> partial(renditions);
  std::vector<bool> open(renditions, false);
  for (size_t i = 0; i < written.size(); ++i) {
    const v1::TranscodeResponse& r = written[i];
    if (r.has_started()) {
      out.started_first = i == 0;
      out.source_codec = r.started().source_codec();
    } else if (r.has_packet()) {
      const v1::OutputPacket& p = r.packet();
      if (p.rendition() >= renditions) {
        out.problems += "packet for rendition " + std::to_string(p.rendition()) + "; ";
        continue;
      }
      partial[p.rendition()].insert(partial[p.rendition()].end(), p.data().begin(), p.data().end());
      open[p.rendition()] = !p.end_of_frame();
      if (p.end_of_frame()) {
        out.renditions[p.rendition()].push_back({p.frame_index(), p.pts(), std::move(partial[p.rendition()])});
        partial[p.rendition()].clear();
      }
    } else if (r.has_summary()) {
      if (i + 1 != written.size()) out.problems += "summary before the end; ";
      out.has_summary = true;
      out.summary = r.summary();
    }
  }
  for (size_t k = 0; k < renditions; ++k) {
    if (open[k]) out.ends_inside_frame = true;
  }
  return out;
}

Decoded DecodeJpeg(const std::vector<uint8_t>& jpeg) {
  Decoded d;
  tjhandle tj = tjInitDecompress();
  int subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(tj, jpeg.data(), jpeg.size(), &d.width, &d.height, &subsamp, &colorspace) == 0) {
    std::vector<uint8_t> rgb(static_cast<size_t>(d.width) * d.height * 3);
    d.ok = tjDecompress2(tj, jpeg.data(), jpeg.size(), rgb.data(), d.width, 0, d.height, TJPF_RGB, 0) == 0;
  }
  tjDestroy(tj);
  return d;
}

}  // namespace conveyor::session_test
