// Winograd F(2x2, 3x3) for conv.cpp's 3x3, stride-1, undilated, ungrouped convolutions:
// 16 GEMMs of (OC x C) by (C x tiles) instead of one of (OC x 9C) by (9C x positions),
// 2.25x fewer multiplications (ResNet's 3x3 layers and their flipped input gradients).
#pragma once
#include <cstdint>

namespace ember::cpu {

// Channels (in and out) from which the Winograd path is taken: below it, the GEMMs'
// inner size C is too short for BLAS to run near its peak.
constexpr int64_t kMinWinogradChannels = 32;
// Output width from which it is taken: narrower tile rows leave the transforms' vector loops
// too short (ResNet's 8x8 layer ran 25% slower than im2col + GEMM).
constexpr int64_t kMinWinogradWidth = 16;
// Tiles of one image times max(C, OC) up to which it is taken: its transformed blocks take
// 16 values per tile and channel (4 MB of float32 here); larger images stay on im2col's bands.
constexpr int64_t kMaxWinogradTileValues = 1 << 16;

// y (N, OC, H + 2ph - 2, W + 2pw - 2) = conv(x (N, C, H, W), w (OC, C, 3, 3)) + bias
// (nullptr: none), stride 1, padding (ph, pw); every pointer contiguous.
template <typename T>
void winograd_conv3x3(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t C, int64_t H, int64_t W,
                      int64_t OC, int64_t ph, int64_t pw);

}  // namespace ember::cpu
