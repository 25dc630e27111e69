/* winograd.c - the fused Winograd F(m x m, 3 x 3) convolution, see winograd.h.
 *
 * Channels are the innermost (contiguous) dimension everywhere, so every inner loop runs over
 * eight channels at a time with unit stride.  The transform matrices are compile-time tables,
 * so their zeros and ones fold away.  On x86-64 the code is also compiled for AVX2 + FMA and
 * the loader picks that version where the CPU has it. */
#include "winograd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=fast")   /* fused multiply-adds, whatever the -std */
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(GOENGINE_NO_CLONES)
#define WINO_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WINO_CLONES
#endif

static int tiles(int size, int m) { return (size + m - 1) / m; }

/* Fast path when the channel count is a multiple of 8: eight channels per vector (GCC vector
 * extension; AVX2 registers in the haswell clone, SSE pairs otherwise), sums kept in registers. */
#if defined(__GNUC__)
#define WINO_VEC 1
#pragma GCC diagnostic ignored "-Wpsabi"   /* static helpers only: no ABI to keep */
typedef float v8f __attribute__((vector_size(32)));
static inline __attribute__((always_inline)) v8f v8_load(const float *p) { v8f r; memcpy(&r, p, sizeof r); return r; }
static inline __attribute__((always_inline)) void v8_store(float *p, v8f r) { memcpy(p, &r, sizeof r); }
#else
#define WINO_VEC 0
#endif

/* The matrices engine/nets/winograd.py builds (points 0, 1, -1, 2, -2, infinity), as constants: the
 * kernel folds their zeros and ones away.  Other matrices are refused (status 1). */
static const float BT2[16] = {-1, 0, 1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, -1, 0, 1};
static const float AT2[8] = {1, 1, 1, 0, 0, 1, -1, 1};
static const float BT3[25] = {2, -1, -2, 1, 0, 0, -2, -1, 1, 0, 0, 2, -3, 1, 0,
                              0, -1, 0, 1, 0, 0, 2, -1, -2, 1};
static const float AT3[15] = {1, 1, 1, 1, 0, 0, 1, -1, 2, 0, 0, 1, 1, 4, 1};
static const float BT4[36] = {4, 0, -5, 0, 1, 0, 0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
                              0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1};
static const float AT4[24] = {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0,
                              0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1};

#if WINO_VEC
#define V8_ZERO ((v8f){0, 0, 0, 0, 0, 0, 0, 0})

/* B^T d B for one tile and every channel (c % 8 == 0): writes v[k * stride + ch], k < a*a.
 * a = m + 2 is a compile-time constant after inlining, and bt one of the tables above. */
static inline __attribute__((always_inline)) void
input_tile(const float *x, int h, int w, int c, int m, int a, const float *bt, int b, int ty,
           int tx, float *v, long stride) {
    const float *src[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < a; i++) {
        _Pragma("GCC unroll 8")
        for (int j = 0; j < a; j++) {
            const int y = ty * m - 1 + i, xx = tx * m - 1 + j;
            src[i][j] = (y >= 0 && y < h && xx >= 0 && xx < w)
                            ? x + (((long)b * h + y) * w + xx) * c : NULL;
        }
    }
    for (int c0 = 0; c0 < c; c0 += 8) {
        v8f d[WINO_MAX_ALPHA][WINO_MAX_ALPHA], t1[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
        _Pragma("GCC unroll 8")
        for (int i = 0; i < a; i++) {
            _Pragma("GCC unroll 8")
            for (int j = 0; j < a; j++) d[i][j] = src[i][j] ? v8_load(src[i][j] + c0) : V8_ZERO;
        }
        _Pragma("GCC unroll 8")
        for (int i = 0; i < a; i++) {
            _Pragma("GCC unroll 8")
            for (int j = 0; j < a; j++) {
                v8f acc = V8_ZERO;
                _Pragma("GCC unroll 8")
                for (int k = 0; k < a; k++)
                    if (bt[i * a + k] != 0.0f) acc += bt[i * a + k] * d[k][j];
                t1[i][j] = acc;
            }
        }
        _Pragma("GCC unroll 8")
        for (int i = 0; i < a; i++) {
            _Pragma("GCC unroll 8")
            for (int j = 0; j < a; j++) {
                v8f acc = V8_ZERO;
                _Pragma("GCC unroll 8")
                for (int k = 0; k < a; k++)
                    if (bt[j * a + k] != 0.0f) acc += bt[j * a + k] * t1[i][k];
                v8_store(v + (long)(i * a + j) * stride + c0, acc);
            }
        }
    }
}

/* A^T M A (+ bias, + residual, relu) for one tile and every output channel (co % 8 == 0),
 * reading mm[k * stride + ch]. */
static inline __attribute__((always_inline)) void
output_tile(const float *mm, long stride, int h, int w, int co, int m, int a, const float *at,
            const float *bias, const float *residual, int relu, int b, int ty, int tx, float *y) {
    for (int c0 = 0; c0 < co; c0 += 8) {
        v8f t1[WINO_MAX_ALPHA][WINO_MAX_ALPHA];
        _Pragma("GCC unroll 8")
        for (int i = 0; i < m; i++) {
            _Pragma("GCC unroll 8")
            for (int j = 0; j < a; j++) {
                v8f acc = V8_ZERO;
                _Pragma("GCC unroll 8")
                for (int k = 0; k < a; k++)
                    if (at[i * a + k] != 0.0f)
                        acc += at[i * a + k] * v8_load(mm + (long)(k * a + j) * stride + c0);
                t1[i][j] = acc;
            }
        }
        const v8f bv = bias ? v8_load(bias + c0) : V8_ZERO;
        _Pragma("GCC unroll 8")
        for (int i = 0; i < m; i++) {
            const int yy = ty * m + i;
            if (yy >= h) break;
            _Pragma("GCC unroll 8")
            for (int j = 0; j < m; j++) {
                const int xx = tx * m + j;
                if (xx >= w) break;
                v8f acc = bv;
                _Pragma("GCC unroll 8")
                for (int k = 0; k < a; k++)
                    if (at[j * a + k] != 0.0f) acc += at[j * a + k] * t1[i][k];
                const long off = (((long)b * h + yy) * w + xx) * co + c0;
                if (residual) acc += v8_load(residual + off);
                if (relu) {
                    _Pragma("GCC unroll 8")
                    for (int cc = 0; cc < 8; cc++) acc[cc] = acc[cc] > 0.0f ? acc[cc] : 0.0f;
                }
                v8_store(y + off, acc);
            }
        }
    }
}

/* out[r][0..16) = sum_ci v[r][ci] * u[ci][0..16) for r < R (R constant after inlining);
 * rows of v are c apart, rows of u and out co apart.  12 accumulators stay in registers. */
static inline __attribute__((always_inline)) void
kernel_6x16(int R, const float *v, int c, const float *u, int co, float *out) {
    v8f acc[6][2];
    _Pragma("GCC unroll 6")
    for (int r = 0; r < 6; r++) acc[r][0] = acc[r][1] = V8_ZERO;
    for (int ci = 0; ci < c; ci++) {
        const v8f b0 = v8_load(u + (long)ci * co), b1 = v8_load(u + (long)ci * co + 8);
        _Pragma("GCC unroll 6")
        for (int r = 0; r < R; r++) {
            const float s = v[(long)r * c + ci];
            acc[r][0] += s * b0;
            acc[r][1] += s * b1;
        }
    }
    _Pragma("GCC unroll 6")
    for (int r = 0; r < R; r++) {
        v8_store(out + (long)r * co, acc[r][0]);
        v8_store(out + (long)r * co + 8, acc[r][1]);
    }
}

/* M[k] = V[k] . U[k] for k < aa: V[k] is nb x c (rows c apart), U[k] c x co, M[k] nb x co. */
static inline __attribute__((always_inline)) void
block_gemm(int aa, int nb, int c, int co, const float *v, const float *u, float *mm) {
    for (int k = 0; k < aa; k++) {
        const float *vk = v + (long)k * nb * c, *uk = u + (long)k * c * co;
        float *mk = mm + (long)k * nb * co;
        for (int c0 = 0; c0 < co; c0 += 16) {
            int t = 0;
            for (; t + 6 <= nb; t += 6) kernel_6x16(6, vk + (long)t * c, c, uk + c0, co, mk + (long)t * co + c0);
            switch (nb - t) {
            case 5: kernel_6x16(5, vk + (long)t * c, c, uk + c0, co, mk + (long)t * co + c0); break;
            case 4: kernel_6x16(4, vk + (long)t * c, c, uk + c0, co, mk + (long)t * co + c0); break;
            case 3: kernel_6x16(3, vk + (long)t * c, c, uk + c0, co, mk + (long)t * co + c0); break;
            case 2: kernel_6x16(2, vk + (long)t * c, c, uk + c0, co, mk + (long)t * co + c0); break;
            case 1: kernel_6x16(1, vk + (long)t * c, c, uk + c0, co, mk + (long)t * co + c0); break;
            default: break;
            }
        }
    }
}

/* One job of the fused convolution: tiles [first, last) of the arguments, in blocks. */
typedef struct {
    const float *x, *bt, *at, *u, *bias, *residual;
    float *y;
    int n, h, w, c, co, m, relu, block;
    long first, last;
    int status;      /* 0 done, 1 no fast kernel for these matrices, -1 no memory */
} wino_job_t;

/* Tiles [first, last) for one tile size, in blocks of tiles small enough for the caches. */
static inline __attribute__((always_inline)) void
conv_tiles(const wino_job_t *j, int m, int a, const float *bt, const float *at, float *v, float *mm) {
    const int th = tiles(j->h, m), tw = tiles(j->w, m);
    for (long t0 = j->first; t0 < j->last; t0 += j->block) {
        const int nb = (int)(j->last - t0 < j->block ? j->last - t0 : j->block);
        for (int i = 0; i < nb; i++) {
            const long t = t0 + i;
            const int b = (int)(t / ((long)th * tw)), r = (int)(t % ((long)th * tw));
            input_tile(j->x, j->h, j->w, j->c, m, a, bt, b, r / tw, r % tw, v + (long)i * j->c,
                       (long)nb * j->c);
        }
        block_gemm(a * a, nb, j->c, j->co, v, j->u, mm);
        for (int i = 0; i < nb; i++) {
            const long t = t0 + i;
            const int b = (int)(t / ((long)th * tw)), r = (int)(t % ((long)th * tw));
            output_tile(mm + (long)i * j->co, (long)nb * j->co, j->h, j->w, j->co, m, a, at, j->bias,
                        j->residual, j->relu, b, r / tw, r % tw, j->y);
        }
    }
}

static int block_tiles(int a, int c, int co) {
    /* V and M of one block in about 192 KB (L2), a multiple of the kernel's 6 rows. */
    int tb = (int)(192 * 1024 / ((long)a * a * (c + co) * (long)sizeof(float)));
    tb -= tb % 6;
    return tb < 6 ? 6 : tb > 96 ? 96 : tb;
}

WINO_CLONES
static void *conv_job(void *arg) {
    wino_job_t *j = arg;
    const int a = j->m + 2;
    float *v = malloc(sizeof(float) * (size_t)a * a * j->block * (size_t)(j->c + j->co));
    if (!v) {
        j->status = -1;
        return NULL;
    }
    float *mm = v + (size_t)a * a * j->block * j->c;
    j->status = 0;
    if (j->m == 2 && !memcmp(j->bt, BT2, sizeof BT2) && !memcmp(j->at, AT2, sizeof AT2))
        conv_tiles(j, 2, 4, BT2, AT2, v, mm);
    else if (j->m == 3 && !memcmp(j->bt, BT3, sizeof BT3) && !memcmp(j->at, AT3, sizeof AT3))
        conv_tiles(j, 3, 5, BT3, AT3, v, mm);
    else if (j->m == 4 && !memcmp(j->bt, BT4, sizeof BT4) && !memcmp(j->at, AT4, sizeof AT4))
        conv_tiles(j, 4, 6, BT4, AT4, v, mm);
    else
        j->status = 1;
    free(v);
    return NULL;
}
#endif

#define WINO_MAX_THREADS 64

int wino_conv3x3(const float *x, int n, int h, int w, int c, int co, int m, const float *bt,
                 const float *at, const float *u, const float *bias, const float *residual,
                 int relu, int threads, float *y) {
    if (!x || !bt || !at || !u || !y || n < 1 || h < 1 || w < 1 || c < 1 || co < 1 || m < 1
        || m + 2 > WINO_MAX_ALPHA || x == y)
        return -1;
#if WINO_VEC
    if (c % 8 != 0 || co % 16 != 0) return 1;
    const int block = block_tiles(m + 2, c, co);
    const long ntiles = (long)n * tiles(h, m) * tiles(w, m);
    const long blocks = (ntiles + block - 1) / block;
    int jobs = threads < 1 ? 1 : threads > WINO_MAX_THREADS ? WINO_MAX_THREADS : threads;
    if (jobs > blocks) jobs = (int)blocks;
    wino_job_t job[WINO_MAX_THREADS];
    pthread_t tid[WINO_MAX_THREADS];
    int started[WINO_MAX_THREADS] = {0};
    for (int i = 0; i < jobs; i++) {
        job[i] = (wino_job_t){x, bt, at, u, bias, residual, y, n, h, w, c, co, m, relu, block,
                              blocks * i / jobs * block, blocks * (i + 1) / jobs * block, -1};
        if (job[i].last > ntiles) job[i].last = ntiles;
    }
    /* Jobs 1.. on their own threads (run here instead if a thread cannot start), job 0 here. */
    for (int i = 1; i < jobs; i++)
        started[i] = pthread_create(&tid[i], NULL, conv_job, &job[i]) == 0;
    conv_job(&job[0]);
    int status = 0;
    for (int i = 0; i < jobs; i++) {
        if (i > 0) {
            if (started[i]) pthread_join(tid[i], NULL);
            else conv_job(&job[i]);
        }
        if (job[i].status != 0 && (status == 0 || job[i].status < 0)) status = job[i].status;
    }
    return status;
#else
    (void)bias; (void)residual; (void)relu; (void)threads;
    return 1;
#endif
}
