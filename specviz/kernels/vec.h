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

// The widest vector the CPU has: AVX-512's 64 bytes where it has them, else Vec's 32. For loops whose
// lanes never meet (each lane a column, or a dimension, summed on its own in the same order at any
// width): there the width changes the speed, never the numbers.
#if defined(__AVX512F__) && defined(__x86_64__)
template <typename T>
struct WideVec { typedef T V __attribute__((vector_size(64))); };
#else
template <typename T>
struct WideVec { typedef typename Vec<T>::V V; };
#endif
