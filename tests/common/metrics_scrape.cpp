// GET and sample lookup for tests (see metrics_scrape.h).
#include "metrics_scrape.h"

#include <cmath>
#include <cstdlib>

#include <httplib.h>

namespace conveyor::testing {

HttpReply HttpGet(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  auto r = client.Get(path.c_str());
  if (!r) return {};
  return {r->status, r->body};
}

double SampleValue(const std::string& body, const std::string& series) {
  const std::string line = "\n" + series + " ";
  const size_t at = ("\n" + body).find(line);
  if (at == std::string::npos) return std::nan("");
  return std::strtod(body.c_str() + at + line.size() - 1, nullptr);
}

}  // namespace conveyor::testing
