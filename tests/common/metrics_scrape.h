// Reading a daemon's HTTP endpoint in tests: one GET with short timeouts, and the value
// of one series in a /metrics scrape.
#pragma once

#include <string>

namespace conveyor::testing {

struct HttpReply {
  int status = 0;  // 0: no answer
  std::string body;
};

// GET http://127.0.0.1:PORT/PATH with a 2 s connect and a 5 s read timeout.
HttpReply HttpGet(int port, const std::string& path);

// The value of the series `series` (its name and labels as exposed, e.g.
// `conveyor_sessions_ended_total{code="OK"}`) in the text exposition `body`; NaN when
// absent.
double SampleValue(const std::string& body, const std::string& series);

}  // namespace conveyor::testing
