// Causal self-attention for the few rows of a decoding pass, after the KV cache: writes the rows' keys
// and values into the cache, then each row attends to the entries it may see. Built and loaded with
// linear.cpp (specviz/kernels/native.py); specviz/kernels/attention.py says why it exists and what it measured.
//
// A row's output depends only on its query and on the keys and values it sees, in cache order, never
// on the rows beside it or on the entries hidden from it: the visible entries are gathered into a
// compact list first, and every sum runs over that list in order. A token's row in a verify pass (a
// chain, or a path through a tree) therefore rounds exactly as its row in a one-token pass of plain
// decoding: same keys, same order, same instructions.
//
// Plain C++ with GCC/Clang vector extensions (vec.h), like linear.cpp, and one intrinsic: madd.
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>
#include <vector>

#include "vec.h"

// a * b + c, the same rounding in every loop that calls it: one fused rounding where the CPU has FMA (the
// file is built with -ffp-contract=off, so the compiler never fuses on its own, in one loop and not in
// another), two elsewhere.
#if defined(__AVX__) && defined(__x86_64__)
#include <immintrin.h>
#endif
#if defined(__FMA__) && defined(__x86_64__)
static inline Vec<float>::V madd(Vec<float>::V a, Vec<float>::V b, Vec<float>::V c) { return _mm256_fmadd_ps(a, b, c); }
static inline Vec<double>::V madd(Vec<double>::V a, Vec<double>::V b, Vec<double>::V c) { return _mm256_fmadd_pd(a, b, c); }
#else
template <typename V>
static inline V madd(V a, V b, V c) { return a * b + c; }
#endif
#if defined(__AVX512F__) && defined(__x86_64__)  // the weighted sums' wide vectors (SumVec)
static inline WideVec<float>::V madd(WideVec<float>::V a, WideVec<float>::V b, WideVec<float>::V c) {
    return _mm512_fmadd_ps(a, b, c);
}
static inline WideVec<double>::V madd(WideVec<double>::V a, WideVec<double>::V b, WideVec<double>::V c) {
    return _mm512_fmadd_pd(a, b, c);
}
#endif

// exp(x) for x <= 0 (a softmax's x - max), lane by lane: 2^n * e^r with |r| <= ln2 / 2 (Cody-Waite),
// e^r by its Taylor series to within the type's rounding (7 terms for float, 13 for double), 2^n built
// in the exponent bits. Branch-free vector code; below the smallest normal result, 0.
template <typename T>
struct Exp;
template <>
struct Exp<float> {
    typedef int32_t I __attribute__((vector_size(32)));
    static constexpr float lo = -87.0f, shifter = 0x1.8p23f, ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
    static constexpr int terms = 7, mantissa = 23, bias = 127;
};
template <>
struct Exp<double> {
    typedef int64_t I __attribute__((vector_size(32)));
    static constexpr double lo = -708.0, shifter = 0x1.8p52, ln2_hi = 0.693145751953125,
                            ln2_lo = 1.42860682030941723212e-6;
    static constexpr int terms = 13, mantissa = 52, bias = 1023;
};

template <typename T, typename V = typename Vec<T>::V>
static inline V exp_nonpositive(V x) {
    typedef Exp<T> E;
    typedef typename E::I I;
    const V lo = V{} + E::lo, shifter = V{} + E::shifter;
    const V y = x < lo ? lo : x;
    const V big = y * (T)1.4426950408889634 + shifter;  // round to nearest: n sits in the low bits of big
    const V n = big - shifter;
    const V r = (y - n * E::ln2_hi) - n * E::ln2_lo;
    V p = V{} + 1;  // Horner: 1 + r (1 + r/2 (1 + r/3 (...)))
    for (int k = E::terms; k >= 1; k--) p = 1 + p * (r * ((T)1 / (T)k));
    const I scale_bits = ((I)big - (I)shifter + E::bias) << E::mantissa;  // 2^n
    return x < lo ? V{} : p * (V)scale_bits;
}

// The lanes of a vector summed in one fixed order, ((0+1)+(2+3))+((4+5)+(6+7)) for 8 lanes.
template <typename V>
static inline auto lane_sum(V v) {
    const int L = sizeof(V) / sizeof(v[0]);
    auto s = v[0];
    if (L == 8)
        s = ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
    else if (L == 4)
        s = (v[0] + v[1]) + (v[2] + v[3]);
    return s;
}

// lane_sum of four vectors at once, in the same order for every lane: each result is bit for bit lane_sum
// of its vector. -> the four sums (a vector of 4). With AVX, horizontal adds, which pair adjacent lanes
// as lane_sum does; the portable shuffles compiled to permutes whose index vectors, reloaded for every
// group of keys, made this the scores' bottleneck; the horizontal adds give the same bits, faster
// (docs/notes/kernels.md has the figures).
#if defined(__AVX__) && defined(__x86_64__)
static inline __m128 lane_sums(const Vec<float>::V a[4]) {
    const __m256 ab = _mm256_hadd_ps((__m256)a[0], (__m256)a[1]);  // [a01 a23 b01 b23 | a45 a67 b45 b67]
    const __m256 cd = _mm256_hadd_ps((__m256)a[2], (__m256)a[3]);
    const __m256 h = _mm256_hadd_ps(ab, cd);  // [a0123 b0123 c0123 d0123 | a4567 b4567 c4567 d4567]
    return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}
static inline __m256d lane_sums(const Vec<double>::V a[4]) {
    const __m256d ab = _mm256_hadd_pd((__m256d)a[0], (__m256d)a[1]);  // [a01 b01 | a23 b23]
    const __m256d cd = _mm256_hadd_pd((__m256d)a[2], (__m256d)a[3]);  // [c01 d01 | c23 d23]
    return _mm256_add_pd(_mm256_permute2f128_pd(ab, cd, 0x20), _mm256_permute2f128_pd(ab, cd, 0x31));
}
#else
static inline auto lane_sums(const Vec<float>::V a[4]) {
    typedef float V4 __attribute__((vector_size(16)));
    auto pairs = [](Vec<float>::V x, Vec<float>::V y) {  // [x0+x1, x2+x3, .., y6+y7]
        return __builtin_shufflevector(x, y, 0, 2, 4, 6, 8, 10, 12, 14) +
               __builtin_shufflevector(x, y, 1, 3, 5, 7, 9, 11, 13, 15);
    };
    const Vec<float>::V u = pairs(pairs(a[0], a[1]), pairs(a[2], a[3]));  // [a0123, a4567, b0123, .., d4567]
    const V4 sum = __builtin_shufflevector(u, u, 0, 2, 4, 6) + __builtin_shufflevector(u, u, 1, 3, 5, 7);
    return sum;
}
static inline auto lane_sums(const Vec<double>::V a[4]) {
    auto pairs = [](Vec<double>::V x, Vec<double>::V y) {  // [x0+x1, x2+x3, y0+y1, y2+y3]
        return __builtin_shufflevector(x, y, 0, 2, 4, 6) + __builtin_shufflevector(x, y, 1, 3, 5, 7);
    };
    const Vec<double>::V t = pairs(a[0], a[1]), w = pairs(a[2], a[3]);  // [a01, a23, b01, b23], [c01, ..]
    return __builtin_shufflevector(t, w, 0, 2, 4, 6) + __builtin_shufflevector(t, w, 1, 3, 5, 7);
}
#endif

enum { GROUP = 4, ROWS = 6 };  // scores: rows (or keys) per group; weighted sums: rows per tile (2 slices each)

// Scores s[r * W + j] = scale * q_r . k_j for the N rows and the W entries before and among them
// (a score depends only on its row and key). Each is lane_sum of the same L-lane products, whichever
// loop computes it; few rows stream each key once per row, more rows take each key once for all of them.
// causal (a chain, a prefill: row r sees the P + r + 1 entries up to its own): the scores a row cannot
// see are skipped, not computed (softmax_row never reads them): half a prefill's products.
template <typename T, int HS>
static void scores(const T *q, size_t q_stride, size_t N, const T *K, size_t W, size_t P, bool causal, T scale,
                   T *s) {
    typedef typename Vec<T>::V V;
    const int L = sizeof(V) / sizeof(T), D = HS / L;
    auto dot = [&](const V *a, const T *k) {  // one row's L-lane products with one key: two chains, then their sum
        V even = a[0] * load<V>(k), odd = D > 1 ? a[1] * load<V>(k + L) : V{};
        for (int d = 2; d < D; d += 2) {
            even = madd(a[d], load<V>(k + d * L), even);
            odd = madd(a[d + 1], load<V>(k + (d + 1) * L), odd);
        }
        return even + odd;
    };
    if (N < GROUP) {  // a row's query in registers, keys GROUP at a time
        for (size_t r = 0; r < N; r++) {
            V a[D];
            for (int d = 0; d < D; d++) a[d] = load<V>(q + r * q_stride + d * L);
            const size_t seen = causal ? P + r + 1 : W;
            size_t j = 0;
            for (; j + GROUP <= seen; j += GROUP) {
                V acc[GROUP];
                for (int u = 0; u < GROUP; u++) acc[u] = dot(a, K + (j + u) * HS);
                const auto sum = lane_sums(acc) * scale;
                for (int u = 0; u < GROUP; u++) s[r * W + j + u] = sum[u];
            }
            for (; j < seen; j++) s[r * W + j] = lane_sum(dot(a, K + j * HS)) * scale;
        }
        return;
    }
    for (size_t j = 0; j < W; j++) {  // a key in registers, rows GROUP at a time
        V k[D];
        for (int d = 0; d < D; d++) k[d] = load<V>(K + j * HS + d * L);
        size_t r = causal && j > P ? j - P : 0;  // the first row that sees key j
        for (; r + GROUP <= N; r += GROUP) {
            V acc[GROUP];
            for (int u = 0; u < GROUP; u++) acc[u] = dot(k, q + (r + u) * q_stride);  // same products, same order
            const auto sum = lane_sums(acc) * scale;
            for (int u = 0; u < GROUP; u++) s[(r + u) * W + j] = sum[u];
        }
        for (; r < N; r++) s[r * W + j] = lane_sum(dot(k, q + r * q_stride)) * scale;
    }
}

// A row's softmax over its visible entries idx[0..n), in place in its scores row (W wide): e_j =
// exp(s_j - max) where visible, 0 elsewhere. The sum runs over the visible entries in order (in L lanes,
// then the lanes), so it rounds the same however the entries are spread. compact: room for n + L.
// -> 1 / the sum
template <typename T>
static T softmax_row(T *row, size_t W, const int32_t *idx, size_t n, T *compact) {
    typedef typename Vec<T>::V V;
    const int L = sizeof(V) / sizeof(T);
    const bool prefix = n == 0 || (size_t)idx[n - 1] == n - 1;  // entries 0..n-1: a chain's row
    if (prefix)
        memcpy(compact, row, n * sizeof(T));
    else
        for (size_t c = 0; c < n; c++) compact[c] = row[idx[c]];
    size_t end = n;
    for (; end % L; end++) compact[end] = -INFINITY;  // whole vectors: exp gives 0 there
    V mv = V{} - INFINITY;  // the max, L lanes at a time (any order gives the same max)
    for (size_t c = 0; c < end; c += L) {
        const V x = load<V>(compact + c);
        mv = x > mv ? x : mv;
    }
    T m = mv[0];
    for (int l = 1; l < L; l++) m = mv[l] > m ? mv[l] : m;
    V z = V{};
    for (size_t c = 0; c < end; c += L) {
        const V e = exp_nonpositive<T>(load<V>(compact + c) - m);
        memcpy(compact + c, &e, sizeof e);
        z += e;
    }
    if (prefix) {
        memcpy(row, compact, n * sizeof(T));
        memset(row + n, 0, (W - n) * sizeof(T));  // all-zero bits: 0.0
    } else {
        memset(row, 0, W * sizeof(T));
        for (size_t c = 0; c < n; c++) row[idx[c]] = compact[c];
    }
    return 1 / lane_sum(z);
}

// The weighted sums' vector: a lane is one dimension of the head, summed over the entries in order on its
// own, so the widest vector (vec.h's WideVec) gives the same bits as vec.h's Vec (tests/unit/test_linear.py),
// faster on many rows (docs/notes/kernels.md). A head too narrow for two wide vectors (16 floats) keeps Vec.
template <typename T, int HS>
using SumVec = typename std::conditional<(HS * sizeof(T) >= 2 * sizeof(typename WideVec<T>::V)),
                                         typename WideVec<T>::V, typename Vec<T>::V>::type;

// R rows of weighted_sums, one L-wide slice of the values at a time: R sums in registers. The rows' weights
// are W apart; the sums run over the first ``seen`` entries.
template <typename T, int HS, int R>
static void value_tile(const T *e, size_t W, size_t seen, const T *Vs, const T *inv, T *y, size_t y_stride) {
    typedef SumVec<T, HS> V;
    const int L = sizeof(V) / sizeof(T), D = HS / L;
    for (int d = 0; d < D; d += 2) {  // two slices: each weight loaded once for both (D is even)
        V acc[R][2];
        for (int u = 0; u < R; u++) acc[u][0] = acc[u][1] = V{};
        for (size_t j = 0; j < seen; j++) {
            const V v0 = load<V>(Vs + j * HS + d * L), v1 = load<V>(Vs + j * HS + (d + 1) * L);
            for (int u = 0; u < R; u++) {
                const V w = V{} + e[u * W + j];
                acc[u][0] = madd(w, v0, acc[u][0]);
                acc[u][1] = madd(w, v1, acc[u][1]);
            }
        }
        for (int u = 0; u < R; u++)
            for (int s = 0; s < 2; s++) {
                const V o = acc[u][s] * inv[u];
                memcpy(y + u * y_stride + (d + s) * L, &o, sizeof o);
            }
    }
}

// y_r = inv_r * sum over j < W of e[r * W + j] v_j, in order of j (an invisible entry adds an exact 0),
// written at y + r * y_stride. Few rows: a row at a time, its HS / L sums in registers; more: tiles of
// ROWS rows, one L-wide slice of the values at a time. Each sum sees the same terms in the same order.
// causal: a row's sum (a tile's) stops after the last entry it (its last row) sees; what it skips adds 0.
template <typename T, int HS>
static void weighted_sums(const T *e, size_t N, size_t W, size_t P, bool causal, const T *Vs, const T *inv, T *y,
                          size_t y_stride) {
    typedef SumVec<T, HS> V;
    const int L = sizeof(V) / sizeof(T), D = HS / L;
    if (N < GROUP) {
        for (size_t r = 0; r < N; r++) {
            V acc[D];
            for (int d = 0; d < D; d++) acc[d] = V{};
            const size_t seen = causal ? P + r + 1 : W;
            for (size_t j = 0; j < seen; j++)
                for (int d = 0; d < D; d++) acc[d] = madd(V{} + e[r * W + j], load<V>(Vs + j * HS + d * L), acc[d]);
            for (int d = 0; d < D; d++) {
                const V o = acc[d] * inv[r];
                memcpy(y + r * y_stride + d * L, &o, sizeof o);
            }
        }
        return;
    }
    for (size_t r0 = 0; r0 < N; r0 += ROWS) {
        const size_t R = N - r0 < ROWS ? N - r0 : ROWS, seen = causal ? P + r0 + R : W;
        const T *et = e + r0 * W;
        T *yt = y + r0 * y_stride;
        switch (R) {  // R a constant: the R sums stay in registers
            case 1: value_tile<T, HS, 1>(et, W, seen, Vs, inv + r0, yt, y_stride); break;
            case 2: value_tile<T, HS, 2>(et, W, seen, Vs, inv + r0, yt, y_stride); break;
            case 3: value_tile<T, HS, 3>(et, W, seen, Vs, inv + r0, yt, y_stride); break;
            case 4: value_tile<T, HS, 4>(et, W, seen, Vs, inv + r0, yt, y_stride); break;
            case 5: value_tile<T, HS, 5>(et, W, seen, Vs, inv + r0, yt, y_stride); break;
            default: value_tile<T, HS, 6>(et, W, seen, Vs, inv + r0, yt, y_stride); break;
        }
    }
}

// qkv (N, 3C) rows of [q | k | v], C = nh * HS. K, Vs: (nh, capacity, HS). The rows' keys and values go
// to entries P..P+N-1 of every head. Row i sees entry j < P + N where bias[i * bias_stride + j] == 0
// (an additive mask of 0 and -inf, as attention.attn_bias makes), or, with bias NULL, where
// j <= P + i (causal). y (N, C): each row's heads side by side, as c_proj takes them.
template <typename T, int HS>
static void attend(const T *qkv, size_t N, size_t nh, T *K, T *Vs, size_t capacity, size_t P, const T *bias,
                   size_t bias_stride, T scale, T *y) {
    const size_t C = nh * HS, W = P + N;
    for (size_t i = 0; i < N; i++)
        for (size_t h = 0; h < nh; h++) {
            memcpy(K + (h * capacity + P + i) * HS, qkv + i * 3 * C + C + h * HS, HS * sizeof(T));
            memcpy(Vs + (h * capacity + P + i) * HS, qkv + i * 3 * C + 2 * C + h * HS, HS * sizeof(T));
        }
    static thread_local std::vector<int32_t> idx, count;  // each row's visible entries, in order
    static thread_local std::vector<T> e, compact, inv;
    idx.resize(N * W);
    count.resize(N);
    e.resize(N * W);
    compact.resize(W + 8);
    inv.resize(N);
    for (size_t i = 0; i < N; i++) {
        int32_t *row = idx.data() + i * W;
        size_t n = 0;
        if (bias == NULL) {
            for (size_t j = 0; j <= P + i; j++) row[n++] = (int32_t)j;
        } else {
            for (size_t j = 0; j < W; j++)
                if (bias[i * bias_stride + j] == 0) row[n++] = (int32_t)j;
        }
        count[i] = (int32_t)n;
    }
    for (size_t h = 0; h < nh; h++) {
        const T *Kh = K + h * capacity * HS, *Vh = Vs + h * capacity * HS;
        scores<T, HS>(qkv + h * HS, 3 * C, N, Kh, W, P, bias == NULL, scale, e.data());
        for (size_t i = 0; i < N; i++)
            inv[i] = softmax_row<T>(e.data() + i * W, W, idx.data() + i * W, count[i], compact.data());
        weighted_sums<T, HS>(e.data(), N, W, P, bias == NULL, Vh, inv.data(), y + h * HS, C);
    }
}

template <typename T>
static int attend_any(const T *qkv, size_t N, size_t nh, size_t hs, T *K, T *Vs, size_t capacity, size_t P,
                      const T *bias, size_t bias_stride, double scale, T *y) {
    switch (hs) {  // the head sizes it is built for (attention.HEAD_SIZES)
        case 16: attend<T, 16>(qkv, N, nh, K, Vs, capacity, P, bias, bias_stride, (T)scale, y); return 0;
        case 32: attend<T, 32>(qkv, N, nh, K, Vs, capacity, P, bias, bias_stride, (T)scale, y); return 0;
        case 64: attend<T, 64>(qkv, N, nh, K, Vs, capacity, P, bias, bias_stride, (T)scale, y); return 0;
        case 128: attend<T, 128>(qkv, N, nh, K, Vs, capacity, P, bias, bias_stride, (T)scale, y); return 0;
    }
    return 1;
}

extern "C" {  // 0 done, 1 a head size it was not built for (nothing written)
int attend_f32(const float *qkv, size_t N, size_t nh, size_t hs, float *K, float *Vs, size_t capacity, size_t P,
               const float *bias, size_t bias_stride, double scale, float *y) {
    return attend_any<float>(qkv, N, nh, hs, K, Vs, capacity, P, bias, bias_stride, scale, y);
}
int attend_f64(const double *qkv, size_t N, size_t nh, size_t hs, double *K, double *Vs, size_t capacity,
               size_t P, const double *bias, size_t bias_stride, double scale, double *y) {
    return attend_any<double>(qkv, N, nh, hs, K, Vs, capacity, P, bias, bias_stride, scale, y);
}
}
