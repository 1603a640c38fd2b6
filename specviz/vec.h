// The vector type both kernels (linear.cpp, attention.cpp) compute in: GCC/Clang vector extensions,
// which -O3 -march=native turns into the machine's widest instructions, AVX2 or NEON alike.
#pragma once
#include <string.h>

template <typename T>
struct Vec;  // 32 bytes of T: 8 floats or 4 doubles
template <>
struct Vec<float> { typedef float V __attribute__((vector_size(32))); };
template <>
struct Vec<double> { typedef double V __attribute__((vector_size(32))); };

template <typename V, typename T>
static inline V load(const T *p) {
    V v;
    memcpy(&v, p, sizeof v);  // unaligned: compiles to one vector load
    return v;
}
