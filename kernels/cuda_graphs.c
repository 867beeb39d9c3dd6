/* CUDA graphs of small calls (decode steps, drafts, verify passes: up to
 * CUDA_GRAPH_ROWS rows): captured once per skip mask, row count, chain or
 * tree and head request (up to CUDA_GRAPHS of them, least recently used
 * evicted), then replayed with new parameters (cuda_kernels.h: the kernels
 * read tokens, positions, n_past and parents from device memory). A graph
 * replaces the call's ~10 launches per layer with one. */
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

static void graph_key(struct cuda_backend *be, const struct skipper_forward *fw, const struct cuda_batch *b, int nr,
                      int m)
{
	size_t L = (size_t)be->n_layer;
	uint8_t *k = be->graph_key;
	for (size_t l = 0; l < L; l++) {
		k[l] = fw->skip_attn && fw->skip_attn[l] ? 1 : 0;
		k[L + l] = fw->skip_mlp && fw->skip_mlp[l] ? 1 : 0;
	}
	int32_t flags[CUDA_GRAPH_FLAGS] = { fw->kv_write ? 1 : 0, m, fw->top_k, fw->logits ? 1 : 0,
		                            cuda_subset(be, fw), nr, b->parent_d != NULL };
	memcpy(k + 2 * L, flags, sizeof flags);
}

int cuda_run_graph(struct cuda_backend *be, const struct skipper_forward *fw, const struct cuda_batch *b, int nr,
                   int m, struct skipper_error *err)
{
	struct cuda_graph *g = NULL, *victim = &be->graphs[0];
	int rc;

	graph_key(be, fw, b, nr, m);
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
		rc = cuda_enqueue_chunk(be, fw, b, 0, nr, m, fw->logits != NULL, err);
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
