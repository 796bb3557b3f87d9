// JFIF header and trailer (ITU T.81 Annex B, ITU T.871 for APP0).
#include "jfif_writer.h"

#include "jpeg_tables.h"

namespace conveyor {
namespace {

void Put16(std::vector<uint8_t>* out, int v) {
  out->push_back(static_cast<uint8_t>(v >> 8));
  out->push_back(static_cast<uint8_t>(v & 0xFF));
}

void Marker(std::vector<uint8_t>* out, uint8_t code) {
  out->push_back(0xFF);
  out->push_back(code);
}

void PutHuffman(std::vector<uint8_t>* out, int table_class, int id, const HuffmanSpec& spec) {
  out->push_back(static_cast<uint8_t>(table_class << 4 | id));
  out->insert(out->end(), spec.counts, spec.counts + 16);
  out->insert(out->end(), spec.symbols, spec.symbols + spec.num_symbols);
}

}  // namespace

void AppendJfifHeader(const EncodePlan& plan, std::vector<uint8_t>* out) {
  Marker(out, 0xD8);  // SOI

  Marker(out, 0xE0);  // APP0 JFIF 1.01, no density, no thumbnail
  Put16(out, 16);
  const uint8_t jfif[] = {'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0};
  out->insert(out->end(), jfif, jfif + sizeof(jfif));

  if (plan.exif_orientation > 1) {
    // APP1 Exif (CIPA DC-008): a little-endian TIFF header and IFD0 with one entry,
    // Orientation (tag 274, SHORT, count 1), and no next IFD.
    Marker(out, 0xE1);
    const uint8_t o = static_cast<uint8_t>(plan.exif_orientation);
    const uint8_t exif[] = {'E', 'x', 'i', 'f', 0, 0,               // identifier
                            'I', 'I', 42, 0, 8, 0, 0, 0,            // TIFF header, IFD0 at 8
                            1, 0,                                   // one entry
                            0x12, 0x01, 3, 0, 1, 0, 0, 0, o, 0, 0, 0,  // 274, SHORT, 1, value
                            0, 0, 0, 0};                            // no next IFD
    Put16(out, 2 + static_cast<int>(sizeof(exif)));
    out->insert(out->end(), exif, exif + sizeof(exif));
  }

  Marker(out, 0xDB);  // DQT: both tables, 8-bit, zigzag order
  Put16(out, 2 + 2 * 65);
  for (int t = 0; t < 2; ++t) {
    uint8_t q[64];
    ScaledQuantTable(t, plan.quality, q);
    out->push_back(static_cast<uint8_t>(t));
    for (int k = 0; k < 64; ++k) out->push_back(q[kZigzag[k]]);
  }

  Marker(out, 0xC0);  // SOF0 baseline
  Put16(out, 8 + 3 * 3);
  out->push_back(8);
  Put16(out, plan.height);
  Put16(out, plan.width);
  out->push_back(3);
  for (int c = 0; c < 3; ++c) {
    out->push_back(static_cast<uint8_t>(c + 1));
    out->push_back(static_cast<uint8_t>(plan.comp[c].h << 4 | plan.comp[c].v));
    out->push_back(static_cast<uint8_t>(plan.comp[c].quant));
  }

  Marker(out, 0xC4);  // DHT: DC and AC for luma (id 0) and chroma (id 1)
  const HuffmanSpec specs[4] = {StandardDcSpec(0), StandardAcSpec(0), StandardDcSpec(1),
                                StandardAcSpec(1)};
  int length = 2;
  for (const auto& s : specs) length += 1 + 16 + s.num_symbols;
  Put16(out, length);
  PutHuffman(out, 0, 0, specs[0]);
  PutHuffman(out, 1, 0, specs[1]);
  PutHuffman(out, 0, 1, specs[2]);
  PutHuffman(out, 1, 1, specs[3]);

  if (plan.restart_interval > 0) {
    Marker(out, 0xDD);  // DRI
    Put16(out, 4);
    Put16(out, plan.restart_interval);
  }

  Marker(out, 0xDA);  // SOS: all three components, full spectral range
  Put16(out, 6 + 2 * 3);
  out->push_back(3);
  for (int c = 0; c < 3; ++c) {
    out->push_back(static_cast<uint8_t>(c + 1));
    const int id = plan.comp[c].quant;
    out->push_back(static_cast<uint8_t>(id << 4 | id));
  }
  out->push_back(0);
  out->push_back(63);
  out->push_back(0);
}

void AppendJfifTrailer(std::vector<uint8_t>* out) { Marker(out, 0xD9); }

}  // namespace conveyor
