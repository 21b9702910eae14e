#pragma once
// Marks functions callable from both host and CUDA device code.
#if defined(__CUDACC__)
#define EMBER_HD __host__ __device__
#else
#define EMBER_HD
#endif
