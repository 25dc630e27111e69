/* winograd.h - the data transforms of a Winograd F(m x m, 3 x 3) convolution (Lavin & Gray,
 * "Fast Algorithms for Convolutional Neural Networks", 2016) for CPU inference.
 *
 * A 3x3 'same' convolution of x [n][h][w][c] (channels last) becomes, with alpha = m + 2 and
 * T = n * ceil(h/m) * ceil(w/m) output tiles of m x m points:
 *   V = wino_input_transform(x)        [alpha*alpha][T][c]   V = B^T d B per tile and channel
 *   M[k] = V[k] . U[k]                 [alpha*alpha][T][co]  one GEMM per k (done by the caller)
 *   y = wino_output_transform(M)       [n][h][w][co]         y = A^T M A per tile, plus bias
 * where U[k] = (G g G^T)[k] is the transformed filter (computed once, by the caller).
 * bt is B^T (alpha x alpha, row-major) and at is A^T (m x alpha): the caller builds them, so one
 * pair of functions serves every tile size.  Both functions return 0, or -1 for bad arguments. */
#ifndef GO_WINOGRAD_H
#define GO_WINOGRAD_H

/* Largest alpha (= m + 2) the transforms accept. */
#define WINO_MAX_ALPHA 8

int wino_input_transform(const float *x, int n, int h, int w, int c, int m, const float *bt,
                         float *v);
/* y = A^T M A + bias (+ residual), clamped at 0 when relu != 0.  bias (co values) and residual
 * ([n][h][w][co], may be y itself) may be NULL. */
int wino_output_transform(const float *mm, int n, int h, int w, int co, int m, const float *at,
                          const float *bias, const float *residual, int relu, float *y);

/* The whole convolution, fused: per block of tiles (sized for the L2 cache) the input
 * transform, the (m+2)^2 products with the transformed filters u [(m+2)^2][c][co] = G g G^T,
 * and the output transform with bias, residual and relu as above.  Needs c % 8 == 0,
 * co % 16 == 0 and the transform matrices engine/winograd.py builds; returns 1 (nothing done)
 * otherwise, so the caller falls back to the separate transforms.  y must not be x.
 * threads > 1 splits the tiles between that many threads (the caller's one included).
 * Returns 0 when done, -1 for bad arguments or no memory. */
int wino_conv3x3(const float *x, int n, int h, int w, int c, int co, int m, const float *bt,
                 const float *at, const float *u, const float *bias, const float *residual,
                 int relu, int threads, float *y);

#endif
