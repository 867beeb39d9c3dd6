/* cudaemu: the cuBLAS calls of the CUDA backend: a handle bound to a
 * stream and cublasGemmEx in the one form the backend uses, queued in
 * stream order like a kernel. */
#include <cublas_v2.h>

#include <string.h>

#include "cudaemu.h"
#include "internal.h"

using namespace cudaemu;

struct cublasContext {
	cudaStream_t st;
};

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
	if (enter() != cudaSuccess)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	*h = new cublasContext{ nullptr };
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h)
{
	delete h;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t st)
{
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	h->st = st;
	return CUBLAS_STATUS_SUCCESS;
}

namespace {

float bf16(const void *p, size_t i)
{
	uint16_t u;
	memcpy(&u, (const char *)p + 2 * i, 2);
	return __uint_as_float((uint32_t)u << 16);
}

} /* namespace */

/* Column-major C[m][n] = alpha op(A) op(B) + beta C, BF16 inputs, F32 out
 * and compute: the only form the backend uses. */
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                            int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
                            const void *B, cudaDataType Btype, int ldb, const void *beta, void *C,
                            cudaDataType Ctype, int ldc, cublasComputeType_t ct, cublasGemmAlgo_t algo)
{
	if (!h || enter() != cudaSuccess)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (Atype != CUDA_R_16BF || Btype != CUDA_R_16BF || Ctype != CUDA_R_32F || ct != CUBLAS_COMPUTE_32F ||
	    (ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
		return CUBLAS_STATUS_NOT_SUPPORTED;
	if (m < 0 || n < 0 || k < 0 || lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) ||
	    ldc < m)
		return CUBLAS_STATUS_INVALID_VALUE;
	size_t a_n = (size_t)lda * (ta == CUBLAS_OP_N ? k : m), b_n = (size_t)ldb * (tb == CUBLAS_OP_N ? n : k);
	if (!is_device(A, a_n * 2) || !is_device(B, b_n * 2) || !is_device(C, (size_t)ldc * n * 4)) {
		fail(cudaErrorIllegalAddress, "cublasGemmEx: an operand is not (all) device memory");
		make_sticky(cudaErrorIllegalAddress);
		return CUBLAS_STATUS_EXECUTION_FAILED;
	}
	float al = *(const float *)alpha, be = *(const float *)beta;
	cudaError_t e = enqueue(h->st, [=]() {
		float *c = (float *)C;
		for (int j = 0; j < n; j++)
			for (int i = 0; i < m; i++) {
				float s = 0.0f;
				for (int p = 0; p < k; p++) {
					float a = bf16(A, ta == CUBLAS_OP_N ? (size_t)p * lda + i : (size_t)i * lda + p);
					float b = bf16(B, tb == CUBLAS_OP_N ? (size_t)j * ldb + p : (size_t)p * ldb + j);
					s = fmaf(a, b, s);
				}
				float *y = c + (size_t)j * ldc + i;
				*y = be == 0.0f ? al * s : al * s + be * *y;
			}
	});
	return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
