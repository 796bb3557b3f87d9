#include <cstdio>
#include <vector>
#include "cpu_encoder.h"
using namespace conveyor;
int main(int argc, char** argv) {
  int w = atoi(argv[1]), h = atoi(argv[2]);
  auto fmt = ParsePixelFormat(argv[3]).value();
  std::vector<uint8_t> buf(PackedFrameSize(fmt, w, h));
  FILE* f = fopen(argv[4], "rb"); fread(buf.data(), 1, buf.size(), f); fclose(f);
  auto v = MakePackedFrameView(buf.data(), buf.size(), w, h, fmt);
  if (!v.ok()) { printf("%s\n", v.status().ToString().c_str()); return 1; }
  EncodeParams p; p.quality = atoi(argv[6]); p.subsampling = ParseSubsampling(argv[7]).value();
  CpuJpegEncoder enc(2);
  auto out = enc.Encode(*v, p);
  if (!out.ok()) { printf("%s\n", out.status().ToString().c_str()); return 1; }
  f = fopen(argv[5], "wb"); fwrite(out->data(), 1, out->size(), f); fclose(f);
  printf("%zu bytes\n", out->size());
}
