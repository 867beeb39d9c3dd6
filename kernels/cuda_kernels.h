/* Launchers of the CUDA backend's kernels (cuda_kernels_*.cu), callable from
 * the C host code. Every launcher enqueues on `st` and returns the launch status
 * (cudaGetLastError), never synchronises. Weights and K/V are 16-bit values
 * passed as uint16_t: BF16 for weights, F16 for the K/V cache.
 *
 * Batch invariance (DESIGN §2): every kernel here computes a row's result
 * with an instruction sequence and reduction order that depends only on that
 * row's data and the model's dimensions, never on the number of rows in the
 * launch; cuda_gemm() keeps that promise for nr <= CUDA_SKINNY_MAX only. */
#ifndef SKIPPER_CUDA_KERNELS_H
#define SKIPPER_CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDA_SKINNY_MAX 64   /* rows the skinny GEMM takes; more go to cuBLAS */
#define CUDA_MAX_HEAD_DIM 256
#define CUDA_MAX_ANC 1024    /* deepest tree ancestry the attention kernel follows */
#define CUDA_MAX_TOPK 64

/* Per-call parameters the kernels read from device memory (not from launch
 * arguments), so that a captured CUDA graph replays with new values after a
 * single host-to-device copy of this int32 block: [0] n_past, [1] rows
 * gathered for the head, [2..3] unused, then tok[chunk], pos[chunk] and
 * head_rows[chunk] of the current chunk of rows. */
#define CUDA_PARAMS_INTS(chunk) (4 + 3 * (size_t)(chunk))
#define CUDA_P_TOK(p) ((p) + 4)
#define CUDA_P_POS(p, chunk) ((p) + 4 + (size_t)(chunk))
#define CUDA_P_HEAD(p, chunk) ((p) + 4 + 2 * (size_t)(chunk))

/* ---- dequantisation (cuda_kernels_dequant.cu) ---- */

/* Elements per block of `type` that cuda_to_bf16 converts (1 for F32, F16,
 * BF16), 0 for a type it cannot. */
int cuda_dequant_block(int type);
/* dst[rows][ne0] BF16 from rows of `type` at src (row r at r * row_bytes);
 * ne0 a multiple of cuda_dequant_block(type). */
cudaError_t cuda_to_bf16(int type, const void *src, size_t row_bytes, int64_t ne0, int64_t rows,
                         uint16_t *dst, cudaStream_t st);
/* dst[n] F32 from n values of `type` (F32, F16 or BF16; Q8_0 blocks for a
 * K/V cache row, n a multiple of 32). */
cudaError_t cuda_to_f32(int type, const void *src, int64_t n, float *dst, cudaStream_t st);
/* dst[n] BF16 from F32 (activations for cuBLAS). */
cudaError_t cuda_f32_to_bf16(const float *src, int64_t rows, int64_t cols, size_t ss, uint16_t *dst,
                             size_t ds, cudaStream_t st);

/* ---- projections (cuda_kernels_gemm.cu) ---- */

/* Y[r][j] (+)= sum_k W[j][k] * X[r][k] for r < nr (<= CUDA_SKINNY_MAX), j < n.
 * W BF16 [n][k], rows contiguous; k % 8 == 0; X F32 with row stride ldx
 * (ldx % 4 == 0, 16-byte aligned); accumulate: add to Y instead of storing. */
cudaError_t cuda_skinny_gemm(const uint16_t *W, int k, int n, const float *X, int ldx, int nr,
                             float *Y, int ldy, int accumulate, cudaStream_t st);

/* ---- row-wise kernels (cuda_kernels_rows.cu) ---- */

/* h[r] = embedding row tok[r] (BF16 table [n_vocab][ne]) as F32, r < nr. */
cudaError_t cuda_embed(const uint16_t *table, const int32_t *tok, int nr, int ne, float *h,
                       cudaStream_t st);
/* out[r] = x[src(r)] * rsqrt(mean(x^2) + eps) * w for r < nr, src(r) = rows ?
 * rows[r] : r; widths ne, strides xs / os in floats. */
cudaError_t cuda_rmsnorm(const float *x, size_t xs, const int32_t *rows, const float *w, int ne,
                         float eps, float *out, size_t os, int nr, cudaStream_t st);
/* a[r][i] = silu(g[r][i]) * u[r][i], i < nf (g and u rows gs apart, a rows
 * as apart). */
cudaError_t cuda_swiglu(const float *g, const float *u, size_t gs, int nr, int nf, float *a, size_t as,
                        cudaStream_t st);
/* Rows of q [nr][q_dim], k and v [nr][kv_dim] (rows `stride` floats apart)
 * made ready for attention, in place: biases added (bias = [q_dim | kv_dim
 * | kv_dim] or NULL), each head of q and k RMS-normed (q_norm, k_norm
 * [hd] or NULL), RoPE on q and k; then K and V rows stored at kdst/vdst +
 * (r0 + r) * kv_row, where the batch base is cache + n_past * kv_row
 * (kv_write, n_past read from params) or scratch. A cache row is kv_dim
 * F16 values, or (kv_q8) kv_dim / 32 Q8_0 blocks (f16 scale, 32 int8; 17
 * 16-bit units), quantised as the CPU backend's q8_0 cache is.
 * freq[rope_dim/2] angular frequencies (double, computed on the host like
 * the CPU backend); pos[r] read from device memory. */
struct cuda_rope_args {
	float *q, *k, *v;
	int stride;
	int nr, r0, n_head, n_kv, hd, rope_dim, pairs;
	const float *bias, *q_norm, *k_norm;
	float eps;
	const double *freq;
	const int32_t *pos;
	const int32_t *n_past;
	int kv_write, kv_q8, kv_row;
	uint16_t *k_cache, *v_cache; /* this layer's [n_ctx][kv_row] */
	uint16_t *k_scr, *v_scr;     /* this layer's scratch [scr_cap][kv_row] */
};
cudaError_t cuda_rope_store(const struct cuda_rope_args *a, cudaStream_t st);

/* dst[i] = row ids[i] of src, rows of k 16-bit values, i < n (ids on the
 * device). */
cudaError_t cuda_gather_rows(const uint16_t *src, const int32_t *ids, int n, int k, uint16_t *dst,
                             cudaStream_t st);

/* In every layer, cache slot dst[i] = slot src[i], for i in order (rows of
 * kv_row 16-bit units). idx = [n] src then [n] dst on the device. */
cudaError_t cuda_kv_move(uint16_t *k, uint16_t *v, int n_layer, int n_ctx, int kv_row,
                         const int32_t *idx, int n, cudaStream_t st);

/* ---- attention (cuda_kernels_attention.cu) ---- */

struct cuda_attn_args {
	const float *q;   /* [nr] rows q_stride apart, q_dim used, roped */
	int q_stride;
	float *out;       /* [nr][q_dim] */
	int nr, r0, n_head, n_kv, hd;
	float scale;
	const int32_t *n_past;
	const int32_t *parent; /* [call rows] on the device, or NULL = chain */
	int kv_write, kv_q8, kv_row; /* the cache's rows, as cuda_rope_args */
	const uint16_t *k_cache, *v_cache, *k_scr, *v_scr; /* this layer */
};
cudaError_t cuda_attention(const struct cuda_attn_args *a, cudaStream_t st);

/* ---- head (cuda_kernels_head.cu) ---- */

/* For each of nr rows of logits [nr][n_vocab]: the top k (<= CUDA_MAX_TOPK)
 * ids by descending logit, ties by lower id, and their softmax
 * probabilities (probs may be NULL: argmax only). ids/probs rows k apart.
 * A row whose top logit is not finite gets -1 as its first id. */
cudaError_t cuda_topk(const float *logits, int nr, int n_vocab, int k, int32_t *ids, float *probs,
                      cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif
