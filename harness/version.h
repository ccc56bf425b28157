// version.h: balerbench's version, as `--version` prints it and live metrics label it.
#pragma once

namespace balerbench {

inline constexpr char kVersion[] = "0.1.0";

}  // namespace balerbench
