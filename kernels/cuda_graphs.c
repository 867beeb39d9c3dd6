/* CUDA graphs of the one-token step: captured once per skip mask and head
 * request (up to CUDA_GRAPHS of them, least recently used evicted), then
 * replayed with new parameters (cuda_kernels.h: the kernels read them from
 * device memory). */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"

void cuda_graphs_clear(struct cuda_backend *be)
{
	for (int i = 0; i < CUDA_GRAPHS; i++)
		if (be->graphs[i].exec) {
			cudaGraphExecDestroy(be->graphs[i].exec);
			be->graphs[i].exec = NULL;
		}
}

static void graph_key(struct cuda_backend *be, const struct skipper_forward *fw, int m)
{
	size_t L = (size_t)be->n_layer;
	uint8_t *k = be->graph_key;
	for (size_t l = 0; l < L; l++) {
		k[l] = fw->skip_attn && fw->skip_attn[l] ? 1 : 0;
		k[L + l] = fw->skip_mlp && fw->skip_mlp[l] ? 1 : 0;
	}
	int32_t flags[5] = { fw->kv_write ? 1 : 0, m, fw->top_k, fw->logits ? 1 : 0, cuda_subset(be, fw) };
	memcpy(k + 2 * L, flags, sizeof flags);
}

int cuda_run_graph(struct cuda_backend *be, const struct skipper_forward *fw, const struct cuda_batch *b, int m,
                   struct skipper_error *err)
{
	struct cuda_graph *g = NULL, *victim = &be->graphs[0];
	int rc;

	graph_key(be, fw, m);
	for (int i = 0; i < CUDA_GRAPHS; i++) {
		struct cuda_graph *e = &be->graphs[i];
		if (e->exec && memcmp(e->key, be->graph_key, be->graph_key_len) == 0) {
			g = e;
			break;
		}
		if (!e->exec || (victim->exec && e->used < victim->used))
			victim = e;
	}
	if (!g) {
		cudaGraph_t graph = NULL;
		cudaGraphExec_t exec = NULL;
		if (victim->exec) {
			cudaGraphExecDestroy(victim->exec);
			victim->exec = NULL;
		}
		cudaError_t e = cudaStreamBeginCapture(be->st, cudaStreamCaptureModeThreadLocal);
		if (e != cudaSuccess) {
			cudaGetLastError();
			be->graphs_on = 0;
			return 0;
		}
		rc = cuda_enqueue_chunk(be, fw, b, 0, 1, m, fw->logits != NULL, err);
		e = cudaStreamEndCapture(be->st, &graph);
		if (!rc && e == cudaSuccess)
			e = cudaGraphInstantiate(&exec, graph, 0);
		if (graph)
			cudaGraphDestroy(graph);
		if (rc || e != cudaSuccess) {
			/* give up on graphs; the direct path reports real errors */
			cudaGetLastError();
			be->graphs_on = 0;
			cuda_graphs_clear(be);
			return 0;
		}
		victim->exec = exec;
		memcpy(victim->key, be->graph_key, be->graph_key_len);
		g = victim;
	}
	g->used = ++be->tick;
	CU_TRY(cudaGraphLaunch(g->exec, be->st), "cudaGraphLaunch");
	return 1;
}
