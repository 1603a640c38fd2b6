// y (N, O) = x (N, C) @ W (C, O) + b for the few rows N of a decoding pass. Built by specviz/kernels/native.py and
// called by specviz/kernels/linear.py, which says why it exists and what it measured.
//
// W is packed in panels of PW columns (2 vectors: 16 floats, 8 doubles), (O / PW, C, PW), each panel
// contiguous, so the weights stream from memory in order (the prefetcher follows). Up to 6 rows, one
// sweep over the panels multiplies every row by each panel row while it is in registers: each weight
// is read from memory once per pass. More rows go panel by panel, in tiles of at most 6 rows, the
// panel in the L1 or L2 cache after the first tile.
//
// A tile is R rows times J vectors of columns: R * J accumulators (12 at most within AVX2's 16 registers,
// 24 within AVX-512's 32), enough independent FMAs to hide their latency. Every row's sums run over c in order,
// from zero, whatever tile it falls in: a row's result does not depend on how many rows share its
// pass, so a verify pass and a one-token pass give the same logits for the same context.
//
// Plain C++ with GCC/Clang vector extensions (no intrinsics): -O3 -march=native turns the loops into
// the machine's widest FMA instructions, AVX2 or NEON alike, and where the CPU has AVX-512 the vectors
// are 64 bytes (WideVec), with 32 registers for bigger tiles. A column's sum is the same sequence of
// FMAs over c at any width (a lane is a column), so the width changes the speed, never the numbers.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vec.h"

// The products' vector is vec.h's WideVec: AVX-512's 64 bytes where the CPU has them, with 32 registers.
#if defined(__AVX512F__) && defined(__x86_64__)
enum { REGS = 32, ROWS = 14 };  // vector registers; rows per tile at most: 14 x 2 accumulators, 2 weights, an x
// (13 rows in one sweep, not 7 + 6: fewer passes over the weights)
#else
enum { REGS = 16, ROWS = 6 };
#endif
enum { PV = 2 };  // vectors per panel row
// Panels per tile: fewer rows, more panels at once, 8 to 24 accumulators (the mapping that measured best:
// docs/notes/kernels.md).
constexpr int panels_for(int R) {
    return REGS == 16 ? (R == 1 ? 4 : R == 2 ? 3 : R == 3 ? 2 : 1)
                      : (R <= 3 ? 4 : R == 4 ? 3 : R <= 6 ? 2 : 1);
}
// From 4 rows a tile streams one panel (G = 1) and multiplies each of its lines by 4-6 rows: one stream,
// which the hardware prefetcher does not run far enough ahead of DRAM, so the products cost the memory's
// time *plus* the arithmetic's. A tile of 4 rows or more asks for its lines ahead: AHEAD lines on where
// its panel is swept once (4-6 rows), the next panel's where each panel takes several tiles (7 rows and
// more: the lines then arrive over all of a panel's tiles). One row needs none (four streams, which the
// prefetcher follows); 2 and 3 rows do not ask, which measured faster (docs/notes/kernels.md).
enum { AHEAD = 32, PREFETCH_ROWS = 4 };

// Keep a loaded vector in a register. Without this GCC folds the load into each FMA that uses it (a
// memory operand), and with 4 rows that loads each weight 4 times: load-bound (docs/notes/kernels.md).
template <typename V>
static inline V in_register(V v) {
#if defined(__x86_64__) && defined(__AVX512F__)
    __asm__("" : "+v"(v));  // any of the 32 vector registers
#elif defined(__x86_64__) && defined(__AVX__)
    __asm__("" : "+x"(v));
#endif
    return v;
}

// R rows times G adjacent panels (J = G * PV vectors). x: (R, C) rows C apart; panel: the first of
// the G panels; y: (R, O), the tile's first column.
// ahead: how many panel lines on to prefetch (with 4 rows or more).
template <typename T, int R, int G>
static void tile(const T *x, size_t C, const T *panel, const T *b, T *y, size_t O, size_t ahead) {
    typedef typename WideVec<T>::V V;
    const int L = sizeof(V) / sizeof(T), J = G * PV, PW = PV * L, LINES = (PW * sizeof(T) + 63) / 64;
    V acc[R][J];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < J; j++) acc[i][j] = V{};
    for (size_t c = 0; c < C; c++) {
        // An address, not a pointer: past the weights' end a prefetch does not fault. Every tile of a panel that
        // takes several asks for the next one, the small ones too: 7 rows are 3 + 4, and with the first tile
        // silent the next panel's lines were late.
        if (R >= PREFETCH_ROWS || ahead == C)
            for (int g = 0; g < G; g++)
                for (int l = 0; l < LINES; l++)  // a panel row: one line (AVX2), two (AVX-512)
                    __builtin_prefetch((const void *)((uintptr_t)panel + ((g * C + c + ahead) * PW) * sizeof(T) + 64 * l));
        // One weight vector at a time, times every row's x (R registers), where the tile's weights would not
        // also fit in registers beside its accumulators (1-3 rows, G panels). Otherwise (4-6 rows) each x is
        // broadcast once for all J vectors: the other way broadcast it J times, a load each (5 rows: 12 loads
        // for 10 FMAs), and 4-5 rows were slower than 6.
        if (R * J + J + 1 > REGS) {
            for (int j = 0; j < J; j++) {
                const V w = in_register(load<V>(panel + (j / PV) * C * PW + c * PW + (j % PV) * L));
                for (int i = 0; i < R; i++) acc[i][j] += w * x[i * C + c];
            }
        } else {  // the panel row in J registers, one row's x at a time (R * J + J + 1 <= REGS)
            V w[J];
            for (int j = 0; j < J; j++) w[j] = in_register(load<V>(panel + (j / PV) * C * PW + c * PW + (j % PV) * L));
            for (int i = 0; i < R; i++) {
                const T xv = x[i * C + c];
                for (int j = 0; j < J; j++) acc[i][j] += w[j] * xv;
            }
        }
    }
    for (int i = 0; i < R; i++)
        for (int j = 0; j < J; j++) {
            V out = acc[i][j] + load<V>(b + j * L);
            memcpy(y + i * O + j * L, &out, sizeof out);
        }
}

// R <= ROWS rows in one sweep over the panels, G at a time (the last few one at a time).
template <typename T, int R, int G>
static void sweep(const T *x, size_t C, const T *W, size_t O, const T *b, T *y) {
    const size_t PW = PV * sizeof(typename WideVec<T>::V) / sizeof(T);
    size_t o = 0;
    for (; o + G * PW <= O; o += G * PW) tile<T, R, G>(x, C, W + o * C, b + o, y + o, O, AHEAD);
    for (; o < O; o += PW) tile<T, R, 1>(x, C, W + o * C, b + o, y + o, O, AHEAD);
}

// n rows (1..ROWS) of one panel, one of several tiles: they prefetch the next panel.
template <typename T, int R = ROWS>
static void panel_rows(size_t n, const T *x, size_t C, const T *panel, const T *b, T *y, size_t O) {
    if constexpr (R > 1)
        if (n < (size_t)R) return panel_rows<T, R - 1>(n, x, C, panel, b, y, O);
    tile<T, R, 1>(x, C, panel, b, y, O, C);
}

// N <= ROWS rows in one sweep over the panels.
template <typename T, int R = ROWS>
static void one_sweep(const T *x, size_t N, size_t C, const T *W, size_t O, const T *b, T *y) {
    if constexpr (R > 1)
        if (N < (size_t)R) return one_sweep<T, R - 1>(x, N, C, W, O, b, y);
    sweep<T, R, panels_for(R)>(x, C, W, O, b, y);
}

template <typename T>
static void rows(const T *x, size_t N, size_t C, const T *W, size_t O, const T *b, T *y) {
    if (N <= ROWS) return one_sweep<T>(x, N, C, W, O, b, y);
    const size_t PW = PV * sizeof(typename WideVec<T>::V) / sizeof(T);
    const size_t tiles = (N + ROWS - 1) / ROWS;  // tiles as even as they can be: 9 rows as 5 + 4, not 6 + 3
    for (size_t o = 0; o < O; o += PW)
        for (size_t t = 0, n = 0; t < tiles; t++) {
            const size_t r = (N - n) / (tiles - t);
            panel_rows<T>(r, x + n * C, C, W + o * C, b + o, y + n * O + o, O);
            n += r;
        }
}

// A panel's width in bytes (PV vectors), which specviz/kernels/linear.py packs the weights in.
extern "C" size_t linear_panel_bytes() { return PV * sizeof(WideVec<float>::V); }

extern "C" void linear_rows_f32(const float *x, size_t N, size_t C, const float *W, size_t O, const float *b,
                                float *y) {
    rows<float>(x, N, C, W, O, b, y);
}

extern "C" void linear_rows_f64(const double *x, size_t N, size_t C, const double *W, size_t O,
                                const double *b, double *y) {
    rows<double>(x, N, C, W, O, b, y);
}
