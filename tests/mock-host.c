/* Mock host services: real parsers and profiles, fake compute. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "mock-host.h"
#include "policy/policy_host.h"
#include "policy/profile.h"
#include "policy/tensor_file.h"

#define M(ctx) ((struct mock_host *)(ctx))

static void m_set_error(void *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(M(ctx)->error, sizeof M(ctx)->error, fmt, ap);
	va_end(ap);
	M(ctx)->n_errors++;
}

static int fail(void *ctx, const char *msg)
{
	m_set_error(ctx, "%s", msg);
	return SKIPPER_POLICY_ERROR;
}

static void m_log(void *ctx, int level, const char *fmt, ...)
{
	struct mock_host *m = M(ctx);
	size_t used = strlen(m->log);
	va_list ap;
	if (used + 2 < sizeof m->log) {
		va_start(ap, fmt);
		vsnprintf(m->log + used, sizeof m->log - used - 1, fmt, ap);
		va_end(ap);
		strcat(m->log, "\n");
	}
	m->n_logs++;
}

static const char *m_sha(void *ctx)
{
	return M(ctx)->sha256;
}

static int m_parse_bool(void *ctx, const char *v, int *out)
{
	return skipper_parse_bool(v, out) ? fail(ctx, "expected a boolean") : 0;
}

static int m_parse_int(void *ctx, const char *v, int64_t min, int64_t max, int64_t *out)
{
	long l;
	if (skipper_parse_long(v, &l) || l < min || l > max) {
		m_set_error(ctx, "expected an integer in [%lld, %lld], got '%s'", (long long)min, (long long)max, v);
		return SKIPPER_POLICY_ERROR;
	}
	*out = l;
	return 0;
}

static int m_parse_double(void *ctx, const char *v, double min, double max, double *out)
{
	double d;
	if (skipper_parse_double(v, &d) || !(d >= min && d <= max)) {
		m_set_error(ctx, "expected a number in [%g, %g], got '%s'", min, max, v);
		return SKIPPER_POLICY_ERROR;
	}
	*out = d;
	return 0;
}

static int m_parse_layers(void *ctx, const char *v, uint8_t *mask, int n_layer)
{
	struct skipper_error e = { 0 };
	return skipper_layers_parse(v, mask, n_layer, &e) ? fail(ctx, e.msg) : 0;
}

static int m_format_layers(void *ctx, const uint8_t *mask, int n_layer, char *buf, size_t size)
{
	return skipper_layers_format(mask, n_layer, buf, size);
}

static void m_rng_seed(void *ctx, struct skipper_rng *r, uint64_t stream)
{
	uint64_t x = M(ctx)->seed * 0x9e3779b97f4a7c15ULL + stream + 1;
	for (int i = 0; i < 4; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r->s[i] = x;
	}
}

/* xorshift is plenty for tests; the real host uses xoshiro256**. */
static uint64_t m_rng_u64(void *ctx, struct skipper_rng *r)
{
	uint64_t x = r->s[0];
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	r->s[0] = x;
	return x;
}

static double m_rng_double(void *ctx, struct skipper_rng *r)
{
	return (double)(m_rng_u64(ctx, r) >> 11) * 0x1.0p-53;
}

static double m_now(void *ctx)
{
	double t = M(ctx)->clock;
	M(ctx)->clock += M(ctx)->clock_step;
	return t;
}

static const char *m_profile_path(void *ctx)
{
	return M(ctx)->profile_path;
}

static int m_profile_read(void *ctx, const char *path, struct skipper_profile **out)
{
	struct skipper_error e = { 0 };
	struct skipper_profile *p;
	if (skipper_profile_read(path, &p, &e))
		return fail(ctx, e.msg);
	if (M(ctx)->host.n_layer > 0 && skipper_profile_validate(p, M(ctx)->sha256, M(ctx)->host.n_layer, &e)) {
		skipper_profile_free(p);
		return fail(ctx, e.msg);
	}
	*out = p;
	return 0;
}

static int m_profile_new(void *ctx, const char *method, struct skipper_profile **out)
{
	struct skipper_error e = { 0 };
	char n[16];
	snprintf(n, sizeof n, "%d", M(ctx)->host.n_layer);
	if (skipper_profile_new(out, &e) || skipper_profile_set(*out, "profile", "model", "mock", &e) ||
	    skipper_profile_set(*out, "profile", "model_sha256", M(ctx)->sha256, &e) ||
	    skipper_profile_set(*out, "profile", "method", method, &e) ||
	    skipper_profile_set(*out, "profile", "n_layers", n, &e))
		return fail(ctx, e.msg);
	return 0;
}

static const char *m_profile_get(void *ctx, const struct skipper_profile *p, const char *s, const char *k)
{
	return skipper_profile_get(p, s, k);
}

static int m_profile_get_mask(void *ctx, const struct skipper_profile *p, const char *s, const char *k,
                              uint8_t *mask)
{
	struct skipper_error e = { 0 };
	int rc = skipper_profile_get_mask(p, s, k, mask, M(ctx)->host.n_layer, &e);
	if (rc == SKIPPER_ERR_NOT_FOUND)
		return SKIPPER_POLICY_UNKNOWN_KEY;
	return rc ? fail(ctx, e.msg) : 0;
}

static const char *m_profile_section(void *ctx, const struct skipper_profile *p, int i)
{
	return skipper_profile_section(p, i);
}

static int m_profile_set(void *ctx, struct skipper_profile *p, const char *s, const char *k, const char *v)
{
	struct skipper_error e = { 0 };
	return skipper_profile_set(p, s, k, v, &e) ? fail(ctx, e.msg) : 0;
}

static int m_profile_set_mask(void *ctx, struct skipper_profile *p, const char *s, const char *k,
                              const uint8_t *mask)
{
	struct skipper_error e = { 0 };
	return skipper_profile_set_mask(p, s, k, mask, M(ctx)->host.n_layer, &e) ? fail(ctx, e.msg) : 0;
}

static int m_profile_write(void *ctx, const struct skipper_profile *p, const char *path)
{
	struct skipper_error e = { 0 };
	return skipper_profile_write(p, path, &e) ? fail(ctx, e.msg) : 0;
}

static void m_profile_free(void *ctx, struct skipper_profile *p)
{
	skipper_profile_free(p);
}

int32_t mock_next_token(const struct mock_host *m, int32_t tok)
{
	return (int32_t)(((int64_t)tok * 7 + 3) % m->host.n_vocab);
}

static int need_model(void *ctx)
{
	return M(ctx)->host.n_layer > 0 ? 0 : fail(ctx, "no model loaded");
}

static int m_score_mask(void *ctx, const uint8_t *attn, const uint8_t *mlp, const int32_t *tokens, int n,
                        int start_pos, int32_t *argmax)
{
	struct mock_host *m = M(ctx);
	int skipped = 0;
	m->n_score_mask++;
	m->clock += m->compute_seconds;
	if (need_model(ctx))
		return SKIPPER_POLICY_ERROR;
	for (int l = 0; l < m->host.n_layer; l++)
		skipped += (attn && attn[l]) + (mlp && mlp[l]);
	for (int i = 0; i < n; i++) {
		int32_t next = mock_next_token(m, tokens[i]);
		if (skipped && (start_pos + i) % (2 + skipped) == 0)
			next = (next + 1) % m->host.n_vocab;
		argmax[i] = next;
	}
	return 0;
}

static int m_sublayer(void *ctx, int kind, int layer, int n_seq, int seq_len, float *states, const int32_t *pos,
                      int n_past)
{
	struct mock_host *m = M(ctx);
	m->n_sublayer++;
	m->clock += m->compute_seconds;
	if (need_model(ctx))
		return SKIPPER_POLICY_ERROR;
	if (layer < 0 || layer >= m->host.n_layer || (kind != SKIPPER_SUBLAYER_ATTN && kind != SKIPPER_SUBLAYER_MLP))
		return fail(ctx, "sublayer_forward: bad layer or kind");
	for (size_t i = 0; i < (size_t)n_seq * (size_t)seq_len * (size_t)m->host.n_embd; i++)
		states[i] += 0.01f * (float)(kind + 1) * (float)(layer + 1);
	return 0;
}

static int m_head_argmax(void *ctx, int n, const float *states, int32_t *ids)
{
	struct mock_host *m = M(ctx);
	m->n_head_argmax++;
	m->clock += m->compute_seconds;
	if (need_model(ctx))
		return SKIPPER_POLICY_ERROR;
	for (int i = 0; i < n; i++)
		ids[i] = (int32_t)((long)(fabsf(states[(size_t)i * (size_t)m->host.n_embd]) * 1000.0f) % m->host.n_vocab);
	return 0;
}

static int m_time_sublayer(void *ctx, int kind, int layer, int ctx_len, double *seconds)
{
	M(ctx)->n_time_sublayer++;
	if (need_model(ctx))
		return SKIPPER_POLICY_ERROR;
	*seconds = kind == SKIPPER_SUBLAYER_ATTN ? 1e-6 * (1.0 + 1e-3 * ctx_len) : 2e-6;
	return 0;
}

static int m_trial(void *ctx, const struct skipper_trial *t, struct skipper_trial_result *r)
{
	struct mock_host *m = M(ctx);
	int L = m->host.n_layer, skipped = 0;
	m->n_trial++;
	if (need_model(ctx))
		return SKIPPER_POLICY_ERROR;
	memset(r, 0, sizeof *r);
	for (int l = 0; l < L && !t->autoregressive; l++)
		skipped += (t->skip_attn && t->skip_attn[l]) + (t->skip_mlp && t->skip_mlp[l]);
	r->n_generated = t->n_prompts * (t->max_tokens ? t->max_tokens : 32);
	r->alpha = t->autoregressive ? 0.0 : 1.0 - (double)skipped / (2.0 * L);
	/* speed peaks at a moderate skip ratio, like the real trade-off */
	r->tokens_per_s = t->autoregressive ? m->ar_speed : 100.0 * (1.0 + r->alpha * (double)skipped / L);
	r->seconds = r->n_generated / r->tokens_per_s;
	r->mean_accepted = t->autoregressive ? 1.0 : 1.0 + 3.0 * r->alpha;
	return 0;
}

static int m_embed(void *ctx, const char *text, float *out)
{
	struct mock_host *m = M(ctx);
	m->n_embed++;
	if (need_model(ctx))
		return SKIPPER_POLICY_ERROR;
	for (int j = 0; j < m->host.n_embd; j++)
		out[j] = 0.0f;
	for (size_t i = 0; text[i]; i++)
		out[(unsigned char)text[i] % m->host.n_embd] += 1.0f;
	return 0;
}

static int m_tensor_write(void *ctx, const char *path, const struct skipper_tensor *t, int n)
{
	struct skipper_error e = { 0 };
	const char *names[16];
	const float *data[16];
	int rows[16], cols[16];
	if (n > 16)
		return fail(ctx, "mock tensor_write: at most 16 tensors");
	for (int i = 0; i < n; i++) {
		names[i] = t[i].name;
		data[i] = t[i].data;
		rows[i] = t[i].rows;
		cols[i] = t[i].cols;
	}
	return skipper_tensors_write(path, n, names, data, rows, cols, &e) ? fail(ctx, e.msg) : 0;
}

static int m_tensor_read(void *ctx, const char *path, const char *name, float *out, size_t cap, int *rows, int *cols)
{
	struct skipper_error e = { 0 };
	int rc = skipper_tensor_read(path, name, out, cap, rows, cols, &e);
	if (rc == SKIPPER_ERR_NOT_FOUND)
		return SKIPPER_POLICY_UNKNOWN_KEY;
	return rc ? fail(ctx, e.msg) : 0;
}

static const struct skipper_costs *m_costs(void *ctx)
{
	struct mock_host *m = M(ctx);
	m->n_costs++;
	if (need_model(ctx))
		return NULL;
	if (!m->have_costs) {
		m_set_error(ctx, "costs: no curve set in this mock host");
		return NULL;
	}
	return &m->costs;
}

static void costs_shares(struct mock_host *m, double step, double head, double attn, double mlp)
{
	int L = m->host.n_layer > 0 ? m->host.n_layer : 1;
	m->costs.step_seconds = step;
	m->costs.head = m->costs.draft_head = head;
	m->costs.attn = attn / L;
	m->costs.mlp = mlp / L;
	m->have_costs = 1;
}

void mock_costs_cpu(struct mock_host *m)
{
	static const double v[9] = { 0, 1, 1.14, 1.39, 1.39, 1.53, 1.74, 1.91, 2.08 };
	memset(&m->costs, 0, sizeof m->costs);
	m->costs.n_max = SKIPPER_COST_MAX_ROWS;
	memcpy(m->costs.verify, v, sizeof v);
	for (int n = 9; n <= SKIPPER_COST_MAX_ROWS; n++)
		m->costs.verify[n] = m->costs.verify[n - 1] + (n <= 16 ? 0.2 : 0.25);
	costs_shares(m, 0.05, 0.17, 0.14, 0.67);
}

void mock_costs_gpu(struct mock_host *m)
{
	memset(&m->costs, 0, sizeof m->costs);
	m->costs.n_max = SKIPPER_COST_MAX_ROWS;
	for (int n = 1; n <= SKIPPER_COST_MAX_ROWS; n++)
		m->costs.verify[n] = 1 + 0.002 * (n - 1);
	costs_shares(m, 0.01, 0.1, 0.3, 0.6);
}

void mock_host_init(struct mock_host *m, int n_layer, int n_embd, int n_vocab)
{
	memset(m, 0, sizeof *m);
	m->host.struct_size = sizeof m->host;
	m->host.abi_major = SKIPPER_POLICY_ABI_MAJOR;
	m->host.abi_minor = SKIPPER_POLICY_ABI_MINOR;
	m->host.n_layer = n_layer;
	m->host.n_embd = n_embd;
	m->host.n_vocab = n_vocab;
	m->host.n_ctx = 4096;
	m->host.model_name = "mock";
	m->host.model_sha256 = m_sha;
	m->host.log = m_log;
	m->host.set_error = m_set_error;
	m->host.parse_bool = m_parse_bool;
	m->host.parse_int = m_parse_int;
	m->host.parse_double = m_parse_double;
	m->host.parse_layers = m_parse_layers;
	m->host.format_layers = m_format_layers;
	m->host.rng_seed = m_rng_seed;
	m->host.rng_u64 = m_rng_u64;
	m->host.rng_double = m_rng_double;
	m->host.now = m_now;
	m->host.profile_path = m_profile_path;
	m->host.profile_read = m_profile_read;
	m->host.profile_new = m_profile_new;
	m->host.profile_get = m_profile_get;
	m->host.profile_get_mask = m_profile_get_mask;
	m->host.profile_section = m_profile_section;
	m->host.profile_set = m_profile_set;
	m->host.profile_set_mask = m_profile_set_mask;
	m->host.profile_write = m_profile_write;
	m->host.profile_free = m_profile_free;
	m->host.score_mask = m_score_mask;
	m->host.sublayer_forward = m_sublayer;
	m->host.head_argmax = m_head_argmax;
	m->host.time_sublayer = m_time_sublayer;
	m->host.trial = m_trial;
	m->host.embed_prompt = m_embed;
	m->host.tensor_write = m_tensor_write;
	m->host.tensor_read = m_tensor_read;
	m->host.costs = m_costs;
	memset(m->sha256, 'a', 64);
	m->seed = 42;
	m->clock_step = 0.001;
	m->ar_speed = 100.0;
}

int mock_make(const struct skipper_policy *d, struct mock_host *m, void **state, ...)
{
	va_list ap;
	const char *k;
	int rc = d->create(&m->host, m, state);
	if (rc)
		return rc;
	va_start(ap, state);
	while ((k = va_arg(ap, const char *))) {
		const char *v = va_arg(ap, const char *);
		if ((rc = d->config(*state, k, v)))
			break;
	}
	va_end(ap);
	if (!rc)
		rc = d->config_complete(*state);
	if (rc) {
		d->destroy(*state);
		*state = NULL;
	}
	return rc;
}

int mock_has(const char *hay, const char *needle)
{
	int r = hay && strstr(hay, needle) != NULL;
	if (!r)
		printf("# '%s' not in: %s\n", needle, hay ? hay : "(null)");
	return r;
}

const struct skipper_policy *mock_load_policy(const char *name, struct skipper_policy_lib **lib)
{
	struct skipper_error err = { 0 };
	if (skipper_policy_load(name, NULL, lib, &err)) {
		printf("Bail out! cannot load %s: %s\n", name, err.msg);
		exit(1);
	}
	return skipper_policy_lib_desc(*lib);
}

void mock_tmpdir(char *dir, size_t size, const char *prefix)
{
	snprintf(dir, size, "/tmp/%s.XXXXXX", prefix);
	if (!mkdtemp(dir))
		exit(99);
}

void mock_rmdir(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd))
		printf("# cleanup of %s failed\n", dir);
}
