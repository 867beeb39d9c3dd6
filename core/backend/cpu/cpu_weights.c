/* The model's weights as the CPU kernels take them: the model checked
 * against what the kernels run (shapes, types, dimensions), the norms in
 * f32, and each matrix copied once at load into the table's packed layout
 * or, for huge pages, as the file has it, in one block in the order a step
 * reads them; the mapping's pages of a copied weight go back to the
 * loader. */
#include "build-config.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu_backend.h"
#include "base/error.h"
#include "model/quant.h"

static int check_weight(const struct skipper_weight *w, int64_t ne0, int64_t ne1, const char *what,
                        int layer, struct skipper_error *err)
{
	if (!w->data || cpu_wkind(w->type) < 0)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "cpu backend: %s (layer %d): missing or unsupported type %d", what,
		                    layer, w->type);
	if (w->ne0 != ne0 || w->ne1 != ne1)
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "cpu backend: %s (layer %d): shape %lldx%lld, expected %lldx%lld",
		                    what, layer, (long long)w->ne0, (long long)w->ne1, (long long)ne0,
		                    (long long)ne1);
	return 0;
}

int cpu_check_model(const struct skipper_model_view *m, struct skipper_error *err)
{
	const struct skipper_hparams *hp = &m->hp;
	int rc;

	if (hp->n_embd <= 0 || hp->n_embd % 32 || hp->n_ff <= 0 || hp->n_ff % 32 ||
	    hp->n_head <= 0 || hp->n_head_kv <= 0 || hp->n_head % hp->n_head_kv ||
	    hp->head_dim <= 0 || hp->head_dim % 8 || hp->head_dim > CPU_MAX_HEAD_DIM || (hp->n_head * hp->head_dim) % 32 ||
	    hp->n_layer <= 0 || hp->n_vocab <= 0 || hp->rope_dim < 0 || hp->rope_dim % 2 ||
	    hp->rope_dim > hp->head_dim)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
		                    "cpu backend: unsupported hyper-parameters (n_embd %d, n_ff %d, "
		                    "heads %d/%d, head_dim %d, rope_dim %d): the kernels want n_embd, n_ff and "
		                    "heads x head_dim multiples of 32, head_dim a multiple of 8 up to %d, an even "
		                    "rope_dim up to head_dim, query heads a multiple of the KV heads",
		                    hp->n_embd, hp->n_ff, hp->n_head, hp->n_head_kv, hp->head_dim,
		                    hp->rope_dim, CPU_MAX_HEAD_DIM);
	int64_t ne = hp->n_embd, qd = (int64_t)hp->n_head * hp->head_dim,
		kvd = (int64_t)hp->n_head_kv * hp->head_dim;
	if ((rc = check_weight(&m->tok_embd, ne, hp->n_vocab, "token_embd", -1, err)) ||
	    (rc = check_weight(&m->output, ne, hp->n_vocab, "output", -1, err)) ||
	    (rc = check_weight(&m->out_norm, ne, 1, "output_norm", -1, err)))
		return rc;
	for (int l = 0; l < hp->n_layer; l++) {
		const struct skipper_layer *L = &m->layers[l];
		if ((rc = check_weight(&L->attn_norm, ne, 1, "attn_norm", l, err)) ||
		    (rc = check_weight(&L->ffn_norm, ne, 1, "ffn_norm", l, err)) ||
		    (rc = check_weight(&L->wq, ne, qd, "attn_q", l, err)) ||
		    (rc = check_weight(&L->wk, ne, kvd, "attn_k", l, err)) ||
		    (rc = check_weight(&L->wv, ne, kvd, "attn_v", l, err)) ||
		    (rc = check_weight(&L->wo, qd, ne, "attn_output", l, err)) ||
		    (rc = check_weight(&L->w_gate, ne, hp->n_ff, "ffn_gate", l, err)) ||
		    (rc = check_weight(&L->w_up, ne, hp->n_ff, "ffn_up", l, err)) ||
		    (rc = check_weight(&L->w_down, hp->n_ff, ne, "ffn_down", l, err)))
			return rc;
	}
	return 0;
}

#define HUGE_PAGE ((size_t)2 << 20)

/* Room for weight copies of sz bytes; free() releases it. With huge, room
 * of 2 MiB or more starts on a 2 MiB boundary and asks for transparent huge
 * pages over its whole 2 MiB stretches (the tail stays on small pages, so
 * no memory is wasted). A decode step streams every weight once: on 4 KiB
 * pages it takes a TLB miss every 4 KiB, and the hardware prefetcher stops
 * at each page's end. The 1.5B decoded about 6 % faster with them
 * (tests/bench-decode, the two alternated 18 times on an AMD EPYC). */
void *cpu_weight_alloc(size_t sz, int huge)
{
	sz = (sz + 63) & ~(size_t)63;
	if (!huge || sz < HUGE_PAGE)
		return aligned_alloc(64, sz);
	void *p;
	if (posix_memalign(&p, HUGE_PAGE, sz))
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, sz & ~(HUGE_PAGE - 1), MADV_HUGEPAGE); /* a hint: a kernel without THP just says no */
#endif
	return p;
}

/* bytes of src in the table's own layout of its kind, 0 when it has none */
static size_t packed_size(const struct cpu_kernels *K, const struct skipper_weight *src)
{
	int kind = cpu_wkind(src->type);
	return K->pack_size && K->matmul_packed[kind] ? K->pack_size(kind, src->ne0, (int)src->ne1) : 0;
}

size_t cpu_weight_size(const struct cpu_backend *be, const struct skipper_weight *src)
{
	size_t sz = packed_size(be->K, src);
	/* the file's layout copied as it is: only to put it on huge pages */
	if (!sz && be->huge_pages)
		sz = src->row_bytes * (size_t)src->ne1;
	return (sz + 63) & ~(size_t)63;
}

void cpu_weight_init(const struct cpu_backend *be, const struct skipper_weight *src, void *own_src, void *dst,
                     struct cpu_weight *out)
{
	const struct cpu_kernels *K = be->K;
	int kind = cpu_wkind(src->type);
	size_t sz = cpu_weight_size(be, src), packed = packed_size(K, src);
	void *buf = !sz ? NULL : dst ? dst : cpu_weight_alloc(sz, be->huge_pages);

	*out = (struct cpu_weight){ .data = src->data, .row_bytes = src->row_bytes, .k = src->ne0, .nc = (int)src->ne1,
	                            .kind = kind, .fn = K->matmul[kind], .own = own_src };
	/* without the memory for a copy, the file's layout in place still works */
	if (!buf)
		return;
	if (packed) {
		K->pack(kind, src->ne0, src->data, src->row_bytes, (int)src->ne1, buf);
		out->row_bytes = packed / (size_t)out->nc;
		out->fn = K->matmul_packed[kind];
	} else {
		memcpy(buf, src->data, src->row_bytes * (size_t)src->ne1);
	}
	free(own_src);
	out->data = buf;
	out->own = buf == dst ? NULL : buf;
}

void cpu_weight_free(struct cpu_weight *w)
{
	free(w->own);
	memset(w, 0, sizeof *w);
}

/* The model's weights as the kernels run them, one task per weight (the
 * packing of a large model, and the zeroed pages it takes, on every
 * core); once packed into a copy of ours, the mapping's pages of a weight
 * leave the resident set (a tied LM head's are still read, row by row, as
 * the embeddings: they come back as needed). */
#define W_PER_LAYER 7

/* Weight t of the model in the order a decode step reads them: each
 * layer's (wq, wk, wv, wo, gate, up, down), then the output head. */
static void weight_at(struct cpu_backend *be, int t, const struct skipper_weight **src, struct cpu_weight **out)
{
	const struct skipper_model_view *m = be->base.model;
	*src = &m->output;
	*out = &be->head;
	if (t < be->n_layer * W_PER_LAYER) {
		const struct skipper_layer *L = &m->layers[t / W_PER_LAYER];
		struct cpu_layer_weights *W = &be->lw[t / W_PER_LAYER];
		const struct skipper_weight *s[W_PER_LAYER] = { &L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down };
		struct cpu_weight *o[W_PER_LAYER] = { &W->wq, &W->wk, &W->wv, &W->wo, &W->gate, &W->up, &W->down };
		*src = s[t % W_PER_LAYER];
		*out = o[t % W_PER_LAYER];
	}
}

struct weight_job {
	struct cpu_backend *be;
	size_t *at; /* weight t's copy at be->weights + at[t] */
};

static void weight_task(void *p, int t, int thread)
{
	const struct weight_job *j = p;
	const struct skipper_weight *src;
	struct cpu_weight *out;
	(void)thread;
	weight_at(j->be, t, &src, &out);
	cpu_weight_init(j->be, src, NULL, j->be->weights ? (char *)j->be->weights + j->at[t] : NULL, out);
	if (out->data != src->data && j->be->base.model->release)
		j->be->base.model->release(j->be->base.model, src->data, (uint64_t)src->row_bytes * (uint64_t)src->ne1);
}

/* Every weight copy into one block, laid out in the order a step reads
 * them: the small ones (a layer's attention projections, 1-2 MB on a
 * 1.5B model) then lie on huge pages too instead of each on small pages
 * of its own, and so do the tails of the large ones. Without the memory
 * for one block, each copy gets its own. The norms in f32. */
int cpu_load_weights(struct cpu_backend *be)
{
	const struct skipper_model_view *m = be->base.model;
	size_t ne = (size_t)be->n_embd;
	int n = be->n_layer * W_PER_LAYER + 1;

	for (int l = 0; l < be->n_layer; l++) {
		skipper_dequant_row(m->layers[l].attn_norm.type, m->layers[l].attn_norm.data,
		               be->norm_attn + l * ne, (int64_t)ne);
		skipper_dequant_row(m->layers[l].ffn_norm.type, m->layers[l].ffn_norm.data,
		               be->norm_ffn + l * ne, (int64_t)ne);
	}
	skipper_dequant_row(m->out_norm.type, m->out_norm.data, be->norm_out, (int64_t)ne);
	struct weight_job j = { be, malloc(sizeof(size_t) * (size_t)n) };
	if (!j.at)
		return -1;
	size_t total = 0;
	for (int t = 0; t < n; t++) {
		const struct skipper_weight *src;
		struct cpu_weight *out;
		weight_at(be, t, &src, &out);
		j.at[t] = total;
		total += cpu_weight_size(be, src);
	}
	if (total)
		be->weights = cpu_weight_alloc(total, be->huge_pages);
	skipper_threadpool_run(be->tp, weight_task, &j, n);
	free(j.at);
	return 0;
}
