#pragma once
// When conv2d's CPU kernel takes the Winograd F(2x2, 3x3) path (aten/src/cpu/conv_winograd.cpp).
// (Beside thresholds.h, which every kernel includes; tests read them through _C._thresholds().)
#include <cstdint>

namespace ember::thresholds {
// Channels (in and out) from which the Winograd path is taken: below it, the GEMMs'
// inner size C is too short for BLAS to run near its peak.
constexpr int64_t kMinWinogradChannels = 32;
// Output width from which it is taken: narrower tile rows leave the transforms' vector loops
// too short (ResNet's 8x8 layer ran 25% slower than im2col + GEMM).
constexpr int64_t kMinWinogradWidth = 16;
// Tiles of one image times max(C, OC) up to which it is taken: its transformed blocks take
// 16 values per tile and channel (4 MB of float32 here); larger images stay on im2col's bands.
constexpr int64_t kMaxWinogradTileValues = 1 << 16;
}  // namespace ember::thresholds
