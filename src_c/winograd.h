/* winograd.h - a Winograd F(m x m, 3 x 3) convolution (Lavin & Gray, "Fast Algorithms for
 * Convolutional Neural Networks", 2016) for CPU inference.
 *
 * A 3x3 'same' convolution of x [n][h][w][c] (channels last) computed on m x m output tiles,
 * alpha = m + 2: per tile V = B^T d B, per transformed point k < alpha^2 the channel product
 * M[k] = V[k] . U[k] with the transformed filters U = G g G^T (computed once, by the caller),
 * and y = A^T M A.  B^T and A^T are the matrices engine/nets/winograd.py builds (interpolation
 * points 0, 1, -1, 2, -2, infinity), passed in and checked against the tables here. */
#ifndef GO_WINOGRAD_H
#define GO_WINOGRAD_H

/* Largest alpha (= m + 2) accepted. */
#define WINO_MAX_ALPHA 8

/* The whole convolution, fused: per block of tiles (sized for the L2 cache) the input
 * transform, the (m+2)^2 products with the transformed filters u [(m+2)^2][c][co] = G g G^T,
 * and the output transform, + bias (co values, may be NULL), + residual ([n][h][w][co], may be
 * NULL or y itself), clamped at 0 when relu != 0.  Needs c % 8 == 0,
 * co % 16 == 0 and the transform matrices engine/nets/winograd.py builds; returns 1 (nothing done)
 * otherwise (the caller then convolves another way).  y must not be x.
 * threads > 1 splits the tiles between that many threads (the caller's one included).
 * Returns 0 when done, -1 for bad arguments or no memory. */
int wino_conv3x3(const float *x, int n, int h, int w, int c, int co, int m, const float *bt,
                 const float *at, const float *u, const float *bias, const float *residual,
                 int relu, int threads, float *y);

#endif
