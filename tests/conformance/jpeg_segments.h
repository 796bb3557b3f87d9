// A baseline JFIF stream taken apart for byte-level comparison with another encoder's:
// the quantisation and Huffman tables by class and id (so that one DQT holding two
// tables and two DQTs holding one each compare equal), the SOF0, DRI and SOS payloads,
// and the entropy-coded data with its stuffing and RST markers, up to EOI.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace conformance {

struct JpegSegments {
  bool ok = false;
  std::string error;
  // Key: table id (Tq) for DQT; Tc << 4 | Th for DHT. Value: the table's bytes as
  // written, after its class/id byte (Pq and 64 entries; 16 counts and the symbols).
  std::map<int, std::vector<uint8_t>> dqt;
  std::map<int, std::vector<uint8_t>> dht;
  std::vector<uint8_t> sof;  // SOF0 payload
  int dri = -1;              // restart interval, -1 without DRI
  std::vector<uint8_t> sos;  // SOS payload
  std::vector<uint8_t> scan; // entropy-coded data, from after SOS to before EOI
};

JpegSegments SplitJpeg(const std::vector<uint8_t>& jpeg);

// "" when the DQT and DHT tables are equal, else the first table and byte that differ.
std::string TableDifference(const JpegSegments& a, const JpegSegments& b);

// "" when equal, else where the two first differ ("DHT 0x10: byte 17 of 178", ...).
std::string FirstDifference(const JpegSegments& a, const JpegSegments& b);

}  // namespace conformance
