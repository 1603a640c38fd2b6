// y (N, O) = x (N, C) @ W (C, O) + b for the few rows N of a decoding pass. Built and loaded by
// specviz/linear.py, which says why it exists and what it measured.
//
// W is packed in panels of PW columns, (O / PW, C, PW), each panel contiguous, so the weights stream
// from memory in order (the prefetcher follows) and each panel is read from memory once for all N
// rows: up to 3 rows at a time are multiplied by one panel row while it is in registers, and the
// next 3 rows find the panel in the L1 or L2 cache. MKL's small-M gemm instead reads W once per
// row or two, and a one-row pass here is bound by reading the weights.
//
// Plain C++ with GCC/Clang vector extensions (no intrinsics): -O3 -march=native turns the loops into
// the machine's widest FMA instructions, AVX2 or NEON alike.
#include <stddef.h>
#include <string.h>

template <typename T>
struct Vec;  // 32 bytes of T: 8 floats or 4 doubles
template <>
struct Vec<float> { typedef float V __attribute__((vector_size(32))); };
template <>
struct Vec<double> { typedef double V __attribute__((vector_size(32))); };

enum { VECS = 4 };  // vectors per panel row: PW = VECS * lanes (32 floats, 16 doubles)

template <typename V, typename T>
static inline V load(const T *p) {
    V v;
    memcpy(&v, p, sizeof v);  // unaligned: compiles to one vector load
    return v;
}

// R rows times one panel: R * VECS accumulators (12 at most, within AVX2's 16 registers), enough
// independent FMAs to hide their latency. Each row's sums run over c in order.
template <typename T, int R>
static void tile(const T *x, size_t C, const T *panel, const T *b, T *y, size_t O) {
    typedef typename Vec<T>::V V;
    const int L = sizeof(V) / sizeof(T);
    V acc[R][VECS];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < VECS; j++) acc[i][j] = V{};
    for (size_t c = 0; c < C; c++) {
        V w[VECS];  // one panel row, (PW,)
        for (int j = 0; j < VECS; j++) w[j] = load<V>(panel + (c * VECS + j) * L);
        for (int i = 0; i < R; i++) {
            const T xv = x[i * C + c];
            for (int j = 0; j < VECS; j++) acc[i][j] += w[j] * xv;
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < VECS; j++) {
            V out = acc[i][j] + load<V>(b + j * L);
            memcpy(y + i * O + j * L, &out, sizeof out);
        }
}

template <typename T>
static void rows(const T *x, size_t N, size_t C, const T *W, size_t O, const T *b, T *y) {
    const size_t PW = VECS * sizeof(typename Vec<T>::V) / sizeof(T);
    for (size_t o = 0; o < O; o += PW) {  // panel by panel: each is read from memory once
        const T *panel = W + o * C;
        size_t n = 0;
        for (; N - n >= 3 && N - n != 4; n += 3) tile<T, 3>(x + n * C, C, panel, b + o, y + n * O + o, O);
        for (; N - n >= 2; n += 2) tile<T, 2>(x + n * C, C, panel, b + o, y + n * O + o, O);
        if (N - n == 1) tile<T, 1>(x + n * C, C, panel, b + o, y + n * O + o, O);
    }
}

extern "C" void linear_rows_f32(const float *x, size_t N, size_t C, const float *W, size_t O, const float *b,
                                float *y) {
    rows<float>(x, N, C, W, O, b, y);
}

extern "C" void linear_rows_f64(const double *x, size_t N, size_t C, const double *W, size_t O,
                                const double *b, double *y) {
    rows<double>(x, N, C, W, O, b, y);
}
