// Winograd F(2x2, 3x3) for conv.cpp's 3x3, stride-1, undilated, ungrouped convolutions:
// 16 GEMMs of (OC x C) by (C x tiles) instead of one of (OC x 9C) by (9C x positions),
// 2.25x fewer multiplications (ResNet's 3x3 layers and their flipped input gradients).
#pragma once
#include <cstdint>

#include "ember/conv_winograd_thresholds.h"

namespace ember::cpu {

using thresholds::kMaxWinogradTileValues;
using thresholds::kMinWinogradChannels;
using thresholds::kMinWinogradWidth;

// y (N, OC, H + 2ph - 2, W + 2pw - 2) = conv(x (N, C, H, W), w (OC, C, 3, 3)) + bias
// (nullptr: none), stride 1, padding (ph, pw); every pointer contiguous.
template <typename T>
void winograd_conv3x3(const T* x, const T* w, const T* bias, T* y, int64_t N, int64_t C, int64_t H, int64_t W,
                      int64_t OC, int64_t ph, int64_t pw);

}  // namespace ember::cpu
