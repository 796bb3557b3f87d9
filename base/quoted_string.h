// A string as a double-quoted literal with JSON's escapes (\" \\ \n \t \r \uXXXX for the
// other control bytes and DEL), which TOML's basic strings read the same way: the config
// file the daemon renders and the JSON that conveyorctl writes share it.
#pragma once

#include <string>

namespace conveyor {

std::string QuotedString(const std::string& s);

}  // namespace conveyor
