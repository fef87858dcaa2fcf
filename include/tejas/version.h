#pragma once
namespace tejas {
inline constexpr int kVersionMajor = 0;
inline constexpr int kVersionMinor = 1;
inline constexpr int kVersionPatch = 0;
const char* version_string();             // "0.1.0"
const char* compiled_cuda_architectures(); // e.g. "80;90a", or "none" in host-only builds
}  // namespace tejas
