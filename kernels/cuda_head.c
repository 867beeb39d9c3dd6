/* Final norm, LM head and top-k over up to CUDA_HEAD_CHUNK rows of the
 * residual stream, their results copied to pinned buffers. */
#include "cuda_backend.h"

int cuda_head(struct cuda_backend *be, const int32_t *rows_d, int m, int k, int want_probs,
              int want_logits, struct skipper_error *err)
{
	int rc;
	if (m <= 0)
		return 0;
	CU_TRY(cuda_rmsnorm(be->h, (size_t)be->n_embd, rows_d, be->norm_out, be->n_embd, be->rms_eps,
	                    be->hx, (size_t)be->n_embd, m, be->st),
	       "output norm");
	if ((rc = cuda_matmul(be, &be->out, be->hx, be->n_embd, m, be->logits, be->n_vocab, 0, err)))
		return rc;
	if (k > 0) {
		CU_TRY(cuda_topk(be->logits, m, be->n_vocab, k, be->top_ids, want_probs ? be->top_probs : NULL,
		                 be->st),
		       "top-k");
		CU_TRY(cudaMemcpyAsync(be->top_ids_h, be->top_ids, (size_t)m * k * 4, cudaMemcpyDeviceToHost,
		                       be->st),
		       "copy top-k ids");
		if (want_probs)
			CU_TRY(cudaMemcpyAsync(be->top_probs_h, be->top_probs, (size_t)m * k * 4,
			                       cudaMemcpyDeviceToHost, be->st),
			       "copy top-k probabilities");
	}
	if (want_logits)
		CU_TRY(cudaMemcpyAsync(be->logits_h, be->logits, (size_t)m * be->n_vocab * 4,
		                       cudaMemcpyDeviceToHost, be->st),
		       "copy logits");
	return 0;
}
