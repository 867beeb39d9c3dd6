/* Bad requests through the core's checks (core/backend/backend_check.c):
 * each is refused with the status and the message named here, after
 * "cpu backend: " on the CPU backend and "cuda backend: " on the CUDA one
 * (the module on a GPU, or on the CPU emulation: t-cudaemu-check.sh), and
 * leaves the cache as it was; good requests work after them. Without a
 * CUDA backend the CPU half runs alone, unless SKIPPER_TEST_REQUIRE_CUDA=1. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/error.h"
#include "tap.h"
#include "t-backend-model.h"

#define NCTX 64
#define L 2   /* layers */
#define V 160 /* the test model's vocabulary */

struct bad {
	const char *what;
	int status;
	const char *msg; /* after "<name> backend: " */
};

static const struct bad bad[] = {
	{ "empty batch", SKIPPER_ERR_ARG, "batch of 0 rows after 0 committed does not fit 64 context slots" },
	{ "past the context", SKIPPER_ERR_RANGE, "batch of 2 rows after 63 committed does not fit 64 context slots" },
	{ "no tokens", SKIPPER_ERR_ARG, "batch of 1 rows after 0 committed does not fit 64 context slots" },
	{ "negative n_past", SKIPPER_ERR_ARG, "batch of 1 rows after -1 committed does not fit 64 context slots" },
	{ "token past the vocabulary", SKIPPER_ERR_ARG, "token 160 out of range" },
	{ "negative token", SKIPPER_ERR_ARG, "token -1 out of range" },
	{ "parent not before its row", SKIPPER_ERR_ARG, "parent[1] = 1 must be in [-1, 1)" },
	{ "parent below -1", SKIPPER_ERR_ARG, "parent[1] = -2 must be in [-1, 1)" },
	{ "negative position", SKIPPER_ERR_ARG, "negative position" },
	{ "top_k past the most", SKIPPER_ERR_ARG, "bad head request (top_k 65)" },
	{ "negative top_k", SKIPPER_ERR_ARG, "bad head request (top_k -1)" },
	{ "head rows without a list", SKIPPER_ERR_ARG, "bad head request (top_k 1)" },
	{ "top ids without a buffer", SKIPPER_ERR_ARG, "bad head request (top_k 2)" },
	{ "head row past the batch", SKIPPER_ERR_ARG, "out row 2 out of range" },
	{ "capture without a buffer", SKIPPER_ERR_ARG, "bad capture request" },
	{ "capture layer past the model", SKIPPER_ERR_ARG, "capture layer 2 out of range [-1, 1]" },
	{ "capture layer below -1", SKIPPER_ERR_ARG, "capture layer -2 out of range [-1, 1]" },
	{ "sub-layer boundary past the model", SKIPPER_ERR_ARG, "capture sub-layer boundary 4 out of range [-1, 3]" },
	{ "capture row past the batch", SKIPPER_ERR_ARG, "capture row 2 out of range" },
	{ "kv_move without slots", SKIPPER_ERR_ARG, "kv_move without slots" },
	{ "kv_move from past the context", SKIPPER_ERR_ARG, "kv_move 64 -> 0 out of range" },
	{ "kv_move to a negative slot", SKIPPER_ERR_ARG, "kv_move 3 -> -1 out of range" },
	{ "kv_read of a layer past the model", SKIPPER_ERR_ARG, "kv_read layer 2 slot 0" },
	{ "kv_read of a slot past the context", SKIPPER_ERR_ARG, "kv_read layer 0 slot 64" },
	{ "sublayer of no kind", SKIPPER_ERR_ARG, "sublayer kind 2 layer 0 n 1 n_past 0" },
	{ "sublayer past the model", SKIPPER_ERR_ARG, "sublayer kind 0 layer 2 n 1 n_past 0" },
	{ "sublayer past the context", SKIPPER_ERR_ARG, "sublayer kind 1 layer 0 n 1 n_past 64" },
	{ "sublayer without states", SKIPPER_ERR_ARG, "sublayer kind 0 layer 0 n 1 n_past 0" },
	{ "sublayer at a negative position", SKIPPER_ERR_ARG, "negative position" },
	{ "head_argmax of -1 rows", SKIPPER_ERR_ARG, "head_argmax bad arguments" },
	{ "head_argmax without states", SKIPPER_ERR_ARG, "head_argmax bad arguments" },
	{ "time_sublayer of no kind", SKIPPER_ERR_ARG, "time_sublayer bad arguments" },
	{ "time_sublayer past the model", SKIPPER_ERR_ARG, "time_sublayer bad arguments" },
	{ "time_sublayer at a negative context", SKIPPER_ERR_ARG, "time_sublayer bad arguments" },
	{ "time_sublayer without a result", SKIPPER_ERR_ARG, "time_sublayer bad arguments" },
};

/* Send bad request i. */
static int send_bad(struct skipper_backend *be, int i, struct skipper_error *err)
{
	int32_t tok[2] = { 1, 2 }, ids[2], rows[1] = { 0 }, two[1] = { 2 }, one[1] = { 1 };
	int32_t parent[2] = { -1, 1 }, low[2] = { -1, -2 }, pos[2] = { 0, -3 }, capl[1] = { 2 }, capl2[1] = { -2 };
	int32_t cap4[1] = { 4 }, slot64[1] = { 64 }, slot0[1] = { 0 }, slot3[1] = { 3 }, neg[1] = { -1 };
	int32_t badtok[1] = { V }, negtok[1] = { -1 };
	float states[64], kv[64], caps[2 * 64];
	double s;
	struct skipper_forward fw = { .n = 2, .tokens = tok, .kv_write = 1 };

	switch (i) {
	case 0: fw.n = 0; break;
	case 1: fw.n_past = NCTX - 1; break;
	case 2: fw.n = 1, fw.tokens = NULL; break;
	case 3: fw.n = 1, fw.n_past = -1; break;
	case 4: fw.n = 1, fw.tokens = badtok; break;
	case 5: fw.n = 1, fw.tokens = negtok; break;
	case 6: fw.parent = parent; break;
	case 7: fw.parent = low; break;
	case 8: fw.pos = pos; break;
	case 9: fw.n_out = 1, fw.out_rows = rows, fw.top_k = SKIPPER_MAX_TOPK + 1, fw.top_ids = ids; break;
	case 10: fw.n_out = 1, fw.out_rows = rows, fw.top_k = -1, fw.top_ids = ids; break;
	case 11: fw.n_out = 1, fw.top_k = 1, fw.top_ids = ids; break;
	case 12: fw.n_out = 1, fw.out_rows = rows, fw.top_k = 2; break;
	case 13: fw.n_out = 1, fw.out_rows = two; break;
	case 14: fw.n_cap_layers = 1, fw.cap_layers = rows, fw.n_cap_rows = 1, fw.cap_rows = rows; break;
	case 15: fw.n_cap_layers = 1, fw.cap_layers = capl, fw.n_cap_rows = 1, fw.cap_rows = rows, fw.captures = caps; break;
	case 16: fw.n_cap_layers = 1, fw.cap_layers = capl2, fw.n_cap_rows = 1, fw.cap_rows = rows, fw.captures = caps; break;
	case 17:
		fw.n_cap_layers = 1, fw.cap_layers = cap4, fw.cap_sublayers = 1, fw.n_cap_rows = 1, fw.cap_rows = rows;
		fw.captures = caps;
		break;
	case 18: fw.n_cap_layers = 1, fw.cap_layers = one, fw.n_cap_rows = 1, fw.cap_rows = two, fw.captures = caps; break;
	case 19: return skipper_backend_kv_move(be, 0, NULL, slot0, 1, err);
	case 20: return skipper_backend_kv_move(be, 0, slot64, slot0, 1, err);
	case 21: return skipper_backend_kv_move(be, 0, slot3, neg, 1, err);
	case 22: return skipper_backend_kv_read(be, 0, L, 0, kv, kv, err);
	case 23: return skipper_backend_kv_read(be, 0, 0, NCTX, kv, kv, err);
	case 24: return skipper_backend_sublayer(be, 0, 2, 0, 1, states, NULL, 0, err);
	case 25: return skipper_backend_sublayer(be, 0, SKIPPER_ATTN, L, 1, states, NULL, 0, err);
	case 26: return skipper_backend_sublayer(be, 0, SKIPPER_MLP, 0, 1, states, NULL, NCTX, err);
	case 27: return skipper_backend_sublayer(be, 0, SKIPPER_ATTN, 0, 1, NULL, NULL, 0, err);
	case 28: return skipper_backend_sublayer(be, 0, SKIPPER_ATTN, 0, 1, states, neg, 0, err);
	case 29: return skipper_backend_head_argmax(be, -1, states, ids, err);
	case 30: return skipper_backend_head_argmax(be, 1, NULL, ids, err);
	case 31: return skipper_backend_time_sublayer(be, 7, 0, 8, &s, err);
	case 32: return skipper_backend_time_sublayer(be, SKIPPER_MLP, L, 8, &s, err);
	case 33: return skipper_backend_time_sublayer(be, SKIPPER_ATTN, 0, -1, &s, err);
	case 34: return skipper_backend_time_sublayer(be, SKIPPER_ATTN, 0, 8, NULL, err);
	}
	return skipper_backend_forward(be, &fw, err);
}

/* Every bad request on be: the status and "<name> backend: msg". */
static void refuse_all(struct skipper_backend *be)
{
	char want[SKIPPER_ERROR_MAX];
	for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
		struct skipper_error err = { 0 };
		int rc = send_bad(be, i, &err);
		snprintf(want, sizeof want, "%s backend: %s", be->ops->name, bad[i].msg);
		if (!ok(rc == bad[i].status && !strcmp(err.msg, want), "%s: %s refused", be->ops->name, bad[i].what))
			diag("status %d, want %d: \"%s\", want \"%s\"", rc, bad[i].status, err.msg, want);
	}
}

/* After the refusals: the cache untouched, and good requests served. */
static void still_good(struct skipper_backend *be)
{
	struct skipper_error err = { 0 };
	float k[64], v[64];
	int zero = 1;
	for (int l = 0; l < L; l++)
		for (int s = 0; s < NCTX; s++) {
			int rc = skipper_backend_kv_read(be, 0, l, s, k, v, &err);
			for (int i = 0; !rc && i < 32; i++)
				zero &= k[i] == 0.0f && v[i] == 0.0f;
			zero &= rc == 0;
		}
	ok(zero, "%s: the refused requests wrote nothing to the cache", be->ops->name);

	int32_t tok[2] = { 1, 2 }, rows[2] = { 0, 1 }, ids[2];
	struct skipper_forward fw = { .n = 2, .tokens = tok, .kv_write = 1, .n_out = 2, .out_rows = rows, .top_k = 1,
	                              .top_ids = ids };
	int rc = skipper_backend_forward(be, &fw, &err);
	ok(rc == 0 && ids[0] >= 0 && ids[0] < V && ids[1] >= 0 && ids[1] < V, "%s: a good batch runs (%s)",
	   be->ops->name, rc ? err.msg : "ok");
	int32_t src[1] = { 1 }, dst[1] = { 0 };
	ok(skipper_backend_kv_move(be, 0, src, dst, 1, &err) == 0 && skipper_backend_kv_move(be, 0, NULL, NULL, 0, &err) == 0,
	   "%s: kv_move of one slot, and of none", be->ops->name);
	double s = 0;
	rc = skipper_backend_time_sublayer(be, SKIPPER_ATTN, 0, 10 * NCTX, &s, &err);
	ok(rc == 0 && s > 0, "%s: time_sublayer past the last slot times the last slot (%s)", be->ops->name,
	   rc ? err.msg : "ok");
}

int main(void)
{
	struct tm_opts o = { .type = SKIPPER_F32, .n_layer = L, .seed = 3, .rope_style = SKIPPER_ROPE_PAIRS };
	struct tm_model *tm = tm_build(&o);
	struct skipper_backend_opts co = { .n_ctx = NCTX, .n_threads = 1, .kind = SKIPPER_BACKEND_CPU };
	struct skipper_backend_opts go = { .n_ctx = NCTX, .kind = SKIPPER_BACKEND_CUDA };
	struct skipper_backend *cpu = NULL, *cuda = NULL;
	struct skipper_error err = { 0 };
	const char *req = getenv("SKIPPER_TEST_REQUIRE_CUDA");

	if (tm->m.hp.n_vocab != V)
		BAIL("the test model's vocabulary changed");
	if (skipper_backend_create(&tm->m, &co, &cpu, &err))
		BAIL(err.msg);
	int rc = skipper_backend_create(&tm->m, &go, &cuda, &err);
	if (rc && (rc != SKIPPER_ERR_UNSUPPORTED || (req && *req == '1')))
		BAIL(err.msg);
	if (rc)
		diag("no CUDA backend: %s", err.msg);

	refuse_all(cpu);
	still_good(cpu);
	if (cuda) {
		refuse_all(cuda);
		still_good(cuda);
	} else {
		tap_skip((int)(sizeof bad / sizeof bad[0]) + 4, "no CUDA backend");
	}

	/* the head subset: the core refuses the same bad ids for both */
	int32_t ids[2] = { 3, V };
	struct skipper_backend *bes[2] = { cpu, cuda };
	for (int i = 0; i < 2; i++) {
		const char *name = i ? "cuda" : "cpu";
		char want[96];
		if (!bes[i]) {
			tap_skip(3, "no CUDA backend");
			continue;
		}
		err.msg[0] = '\0';
		rc = skipper_backend_set_head_subset(bes[i], ids, 2, &err);
		snprintf(want, sizeof want, "%s backend: head subset id 160 out of range", name);
		ok(rc == SKIPPER_ERR_ARG && !strcmp(err.msg, want), "%s: head subset id past the vocabulary refused (%s)",
		   name, err.msg);
		rc = skipper_backend_set_head_subset(bes[i], ids, V + 1, &err);
		snprintf(want, sizeof want, "%s backend: head subset of 161 ids", name);
		ok(rc == SKIPPER_ERR_ARG && !strcmp(err.msg, want), "%s: head subset larger than the vocabulary refused (%s)",
		   name, err.msg);
		ok(skipper_backend_set_head_subset(bes[i], ids, 1, &err) == 0, "%s: a head subset of one id", name);
	}
	if (cuda)
		cuda->ops->destroy(cuda);
	cpu->ops->destroy(cpu);
	tm_free(tm);
	return tap_done();
}
