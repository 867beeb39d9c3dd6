/* The CPU backend's operations besides forward: K/V compaction and reads,
 * one sub-layer or the head on caller-given states, sub-layer timing, the
 * draft head's subset, profiling. The core has checked their arguments
 * (core/backend/backend_check.c). */
#include "build-config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "base/error.h"

int cpu_kv_move(struct skipper_backend *base, int seq, const int32_t *src, const int32_t *dst, int n,
                struct skipper_error *err)
{
	struct cpu_backend *be = (struct cpu_backend *)base;
	uint8_t *kc = be->k_cache + cpu_kv_seq(be, seq), *vc = be->v_cache + cpu_kv_seq(be, seq);

	(void)err;
	for (int i = 0; i < n; i++) {
		if (src[i] == dst[i])
			continue;
		for (int l = 0; l < be->n_layer; l++)
			for (int g = 0; g < be->n_kv; g++) {
				size_t s = cpu_kv_at(be, l, g, src[i], base->n_ctx), d = cpu_kv_at(be, l, g, dst[i], base->n_ctx);
				memmove(kc + d, kc + s, be->kv_rb);
				memmove(vc + d, vc + s, be->kv_rb);
			}
	}
	return 0;
}

int cpu_kv_read(struct skipper_backend *base, int seq, int layer, int slot, float *k, float *v,
                struct skipper_error *err)
{
	struct cpu_backend *be = (struct cpu_backend *)base;
	(void)err;
	for (int g = 0; g < be->n_kv; g++) {
		size_t off = cpu_kv_seq(be, seq) + cpu_kv_at(be, layer, g, slot, base->n_ctx);
		if (k)
			cpu_kv_load(be, be->k_cache + off, k + (size_t)g * be->hd);
		if (v)
			cpu_kv_load(be, be->v_cache + off, v + (size_t)g * be->hd);
	}
	return 0;
}

int cpu_sublayer(struct skipper_backend *base, int seq, int kind, int layer, int n, float *states,
                 const int32_t *pos, int n_past, struct skipper_error *err)
{
	struct cpu_backend *be = (struct cpu_backend *)base;
	size_t ne = (size_t)be->n_embd;
	int32_t p[CPU_CHUNK];
	int rc;

	if ((rc = cpu_grow_scratch(be, n, err)))
		return rc;
	struct skipper_fw_seg one = { .seq = seq, .row0 = 0, .n = n, .n_past = n_past };
	struct cpu_batch b = { .n = n, .parent = NULL, .kv_write = 0, .n_seg = 1, .seg = &one };
	int prof = be->prof_on; /* a policy's service, not a pass */
	be->prof_on = 0;
	for (int r0 = 0; r0 < n; r0 += CPU_CHUNK) {
		int nr = n - r0 < CPU_CHUNK ? n - r0 : CPU_CHUNK;
		memcpy(be->h, states + (size_t)r0 * ne, (size_t)nr * ne * sizeof(float));
		if (kind == SKIPPER_ATTN) {
			for (int r = 0; r < nr; r++)
				p[r] = pos ? pos[r0 + r] : n_past + r0 + r;
			cpu_rope_table(be, p, nr, be->rope_cs);
			cpu_attn_block(be, &b, layer, r0, nr);
		} else {
			cpu_mlp_block(be, layer, nr);
		}
		memcpy(states + (size_t)r0 * ne, be->h, (size_t)nr * ne * sizeof(float));
	}
	be->prof_on = prof;
	return 0;
}

int cpu_head_argmax(struct skipper_backend *base, int n, const float *states, int32_t *ids,
                    struct skipper_error *err)
{
	struct cpu_backend *be = (struct cpu_backend *)base;
	size_t ne = (size_t)be->n_embd;
	int prof = be->prof_on; /* a policy's service, not a pass */
	be->prof_on = 0;
	for (int r0 = 0; r0 < n; r0 += CPU_HEAD_CHUNK) {
		int nr = n - r0 < CPU_HEAD_CHUNK ? n - r0 : CPU_HEAD_CHUNK;
		cpu_head_logits(be, states + (size_t)r0 * ne, ne, nr, 0);
		for (int r = 0; r < nr; r++) {
			const float *lg = be->logits + (size_t)r * be->n_vocab;
			int32_t id = cpu_argmax(lg, be->n_vocab);
			if (!isfinite(lg[id])) {
				be->prof_on = prof;
				return cpu_nonfinite(base->model, err);
			}
			ids[r0 + r] = id;
		}
	}
	be->prof_on = prof;
	return 0;
}

int cpu_time_sublayer(struct skipper_backend *base, int kind, int layer, int ctx_len,
                      double *seconds, struct skipper_error *err)
{
	struct cpu_backend *be = (struct cpu_backend *)base;
	size_t ne = (size_t)be->n_embd;
	float *st;
	int rc = 0, reps = 0;

	st = malloc(ne * sizeof *st); /* owned here, freed below */
	if (!st)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: out of memory");
	/* a unit-scale state: the norm makes the magnitude irrelevant for time */
	for (size_t i = 0; i < ne; i++)
		st[i] = (float)((i * 37 % 17) - 8) / 8.0f;
	rc = cpu_sublayer(base, 0, kind, layer, 1, st, NULL, ctx_len, err); /* warm-up */
	double t0 = cpu_now(), t = t0;
	/* at least 3 runs and ~2 ms of work; cap the count for tiny layers */
	while (!rc && (reps < 3 || (t - t0 < 2e-3 && reps < 1000))) {
		for (size_t i = 0; i < ne; i++)
			st[i] = (float)((i * 37 % 17) - 8) / 8.0f;
		rc = cpu_sublayer(base, 0, kind, layer, 1, st, NULL, ctx_len, err);
		reps++;
		t = cpu_now();
	}
	free(st);
	if (!rc)
		*seconds = (t - t0) / reps;
	return rc;
}

int cpu_set_head_subset(struct skipper_backend *base, const int32_t *ids, int n,
                        struct skipper_error *err)
{
	struct cpu_backend *be = (struct cpu_backend *)base;
	const struct skipper_weight *out = &base->model->output;
	uint8_t *data = NULL;
	int32_t *copy = NULL;

	if (n > 0 && (!(data = malloc(out->row_bytes * (size_t)n)) || !(copy = malloc(sizeof *copy * (size_t)n)))) {
		free(data);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: head subset of %d rows", n);
	}
	/* the subset's rows side by side: one contiguous matrix to stream */
	for (int i = 0; i < n; i++) {
		memcpy(data + out->row_bytes * (size_t)i, (const uint8_t *)out->data + out->row_bytes * (size_t)ids[i],
		       out->row_bytes);
		copy[i] = ids[i];
	}
	free(be->sub_ids);
	cpu_weight_free(&be->sub_head);
	struct skipper_weight sub = *out;
	sub.ne1 = n;
	sub.data = data;
	cpu_weight_init(be, &sub, data, NULL, &be->sub_head);
	be->sub_ids = copy;
	return 0;
}

void cpu_timing(struct skipper_backend *base, int on, struct skipper_backend_timing *out)
{
	struct cpu_backend *be = (struct cpu_backend *)base;
	if (on && !be->prof_on) {
		memset(&be->prof, 0, sizeof be->prof);
		skipper_threadpool_waited(be->tp);
	}
	be->prof_on = on;
	skipper_threadpool_timing(be->tp, on);
	if (out)
		*out = be->prof;
}

int cpu_set_sequences(struct skipper_backend *base, int n, struct skipper_error *err)
{
	struct cpu_backend *be = (struct cpu_backend *)base;
	int rc = cpu_check_memory(base, n, 0, err);
	if (rc)
		return rc;
	/* zeroed so that timing runs over never-written slots read finite values */
	uint8_t *k = calloc((size_t)n, be->kv_seq), *v = k ? calloc((size_t)n, be->kv_seq) : NULL;

	if (!v) {
		free(k);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "cpu backend: %d sequences of %d tokens need %.1f GiB of K/V cache",
		                    n, base->n_ctx, 2.0 * (double)n * (double)be->kv_seq * sizeof *k / (1 << 30));
	}
	free(be->k_cache);
	free(be->v_cache);
	be->k_cache = k;
	be->v_cache = v;
	base->n_seq = n;
	return 0;
}

/* The processor, as far as the kernels' speed depends on it: the fields of
 * /proc/cpuinfo's first entry that name its make and instruction set (x86:
 * model name, family, model, stepping, flags; Arm: implementer, part,
 * variant, features). The model name alone is not enough: virtual machines
 * call a Zen 3, a Zen 4 and a Zen 5 all "AMD EPYC", and a verification
 * pass of 8 rows on the 1.5B costs 3.5 decode steps on the first (AVX2
 * only) and 1.5 on the last. Then what this backend chose to run there. */
void cpu_identity(struct skipper_backend *base, char *buf, size_t n)
{
	static const char *const keys[] = { "model name", "cpu family", "model", "stepping", "flags",
		                            "CPU implementer", "CPU part", "CPU variant", "Features" };
	struct cpu_backend *be = (struct cpu_backend *)base;
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	size_t len = 0;

	buf[0] = 0;
	while (f && fgets(line, sizeof line, f) && line[0] != '\n') {
		char *c = strchr(line, ':');
		if (!c)
			continue;
		size_t k = (size_t)(c - line);
		while (k && (line[k - 1] == ' ' || line[k - 1] == '\t'))
			k--;
		for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
			if (strlen(keys[i]) == k && !strncmp(line, keys[i], k) && len < n) {
				c[strcspn(c, "\n")] = 0;
				len += (size_t)snprintf(buf + len, n - len, "%s=%s|", keys[i], c[1] == ' ' ? c + 2 : c + 1);
			}
	}
	if (f)
		fclose(f);
	if (len < n)
		snprintf(buf + len, n - len, "%skernels=%s|threads=%d|huge pages=%d|prefetch=%d%s", len ? "" : "unknown cpu|",
		         be->K->name, be->n_threads, be->huge_pages, cpu_pk_prefetch,
		         be->kv_type == CPU_KV_Q8_0 ? "|kv=q8_0" : "");
}
