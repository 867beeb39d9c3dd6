/* Final norm, LM head and top-k over up to CUDA_HEAD_CHUNK rows of the
 * residual stream, their results copied to pinned buffers. The draft head
 * is the same GEMM over the subset's rows gathered into one matrix, so a
 * subset logit has the bits of the full head's logit for that id. */
#include "cuda_backend.h"

int cuda_head(struct cuda_backend *be, const int32_t *rows_d, int m, int k, int want_probs,
              int want_logits, int subset, struct skipper_error *err)
{
	const struct cuda_w *w = subset ? &be->sub : &be->out;
	int rc;
	if (m <= 0)
		return 0;
	CU_TRY(cuda_rmsnorm(be->h, (size_t)be->n_embd, rows_d, be->norm_out, be->n_embd, be->rms_eps,
	                    be->hx, (size_t)be->n_embd, m, be->st),
	       "output norm");
	/* logits rows w->n apart */
	if ((rc = cuda_matmul(be, w, be->hx, be->n_embd, m, be->logits, w->n, 0, err)))
		return rc;
	if (k > 0) {
		CU_TRY(cuda_topk(be->logits, m, w->n, k, be->top_ids, want_probs ? be->top_probs : NULL,
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
		CU_TRY(cudaMemcpyAsync(be->logits_h, be->logits, (size_t)m * w->n * 4,
		                       cudaMemcpyDeviceToHost, be->st),
		       "copy logits");
	return 0;
}
