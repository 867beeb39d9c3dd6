/* Policy host, part 2: the host-services table plugins call (DESIGN §5):
 * errors and logging, value parsing, the seeded RNG, the clock, profiles and
 * tensor files, and the compute services forwarded to the engine. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "build-config.h"
#include "config/config.h"
#include "base/error.h"
#include "policy_internal.h"
#include "profile.h"
#include "tensor_file.h"
#include "base/rng.h"

double skipper_policy_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define INST(ctx) ((struct skipper_policy_instance *)(ctx))

static void svc_set_error(void *ctx, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(INST(ctx)->msg, sizeof INST(ctx)->msg, fmt, ap);
	va_end(ap);
	INST(ctx)->msg_set = 1;
}

static void svc_log(void *ctx, int level, const char *fmt, ...)
{
	const struct skipper_policy_env *env = INST(ctx)->env;
	char buf[SKIPPER_ERROR_MAX];
	va_list ap;

	if (!env->log || level > env->log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	env->log(env->session, level, INST(ctx)->lib->desc.name, buf);
}

static const char *svc_model_sha256(void *ctx)
{
	const struct skipper_policy_env *env = INST(ctx)->env;
	return env->model_sha256 ? env->model_sha256(env->session) : NULL;
}

static int svc_parse_bool(void *ctx, const char *value, int *out)
{
	if (value && skipper_parse_bool(value, out) == SKIPPER_OK)
		return SKIPPER_POLICY_OK;
	svc_set_error(ctx, "expected a boolean (yes/no, true/false, on/off, 1/0), got '%s'", value ? value : "");
	return SKIPPER_POLICY_ERROR;
}

static int svc_parse_int(void *ctx, const char *value, int64_t min, int64_t max, int64_t *out)
{
	long v;
	if (!value || skipper_parse_long(value, &v) != SKIPPER_OK || v < min || v > max) {
		if (min == INT64_MIN && max == INT64_MAX)
			svc_set_error(ctx, "expected an integer, got '%s'", value ? value : "");
		else
			svc_set_error(ctx, "expected an integer in [%lld, %lld], got '%s'", (long long)min,
			              (long long)max, value ? value : "");
		return SKIPPER_POLICY_ERROR;
	}
	*out = v;
	return SKIPPER_POLICY_OK;
}

static int svc_parse_double(void *ctx, const char *value, double min, double max, double *out)
{
	double v;
	if (!value || skipper_parse_double(value, &v) != SKIPPER_OK || !(v >= min && v <= max)) {
		svc_set_error(ctx, "expected a number in [%g, %g], got '%s'", min, max, value ? value : "");
		return SKIPPER_POLICY_ERROR;
	}
	*out = v;
	return SKIPPER_POLICY_OK;
}

static int svc_parse_layers(void *ctx, const char *value, uint8_t *mask, int n_layer)
{
	struct skipper_error e = { 0 };
	if (skipper_layers_parse(value, mask, n_layer, &e) != SKIPPER_OK) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int svc_format_layers(void *ctx, const uint8_t *mask, int n_layer, char *buf, size_t size)
{
	return skipper_layers_format(mask, n_layer, buf, size);
}

static void svc_rng_seed(void *ctx, struct skipper_rng *rng, uint64_t stream)
{
	/* Seed from the run seed, the policy name and the stream so that two
	 * policies or two streams never share a sequence. */
	uint64_t h = UINT64_C(0xcbf29ce484222325);
	for (const char *c = INST(ctx)->lib->desc.name; *c; c++)
		h = (h ^ (unsigned char)*c) * UINT64_C(0x100000001b3);
	skipper_rng_seed(rng, INST(ctx)->env->seed ^ h ^ (stream * UINT64_C(0xd1342543de82ef95)));
}

static uint64_t svc_rng_u64(void *ctx, struct skipper_rng *rng)
{
	return skipper_rng_u64(rng);
}

static double svc_rng_double(void *ctx, struct skipper_rng *rng)
{
	return skipper_rng_double(rng);
}

static double svc_now(void *ctx)
{
	return skipper_policy_now();
}

static const char *svc_profile_path(void *ctx)
{
	const struct skipper_policy_env *env = INST(ctx)->env;
	struct skipper_policy_instance *inst = INST(ctx);
	const char *p = env->profile_path;
	if ((!p || !*p) && env->find_profile && env->n_layer > 0) {
		if (!inst->searched)
			inst->found_profile = env->find_profile(env->session, inst->lib->desc.name);
		inst->searched = 1;
		p = inst->found_profile;
	}
	return p && *p ? p : NULL;
}

static int svc_profile_read(void *ctx, const char *path, struct skipper_profile **out)
{
	const struct skipper_policy_env *env = INST(ctx)->env;
	struct skipper_error e = { 0 };
	struct skipper_profile *p;

	*out = NULL;
	if (skipper_policy_trusted(INST(ctx), path, &e) || skipper_profile_read(path, &p, &e))
		goto fail;
	if (env->n_layer > 0) {
		const char *sha = svc_model_sha256(ctx);
		if (skipper_profile_validate(p, sha, env->n_layer, &e)) {
			skipper_profile_free(p);
			goto fail;
		}
	}
	*out = p;
	return SKIPPER_POLICY_OK;
fail:
	svc_set_error(ctx, "%s", e.msg);
	return SKIPPER_POLICY_ERROR;
}

/* Model names come from file metadata: keep them on one INI-safe line. */
static void ini_safe(char *dst, size_t size, const char *src)
{
	size_t n = 0;
	for (; *src && n + 1 < size; src++)
		dst[n++] = strchr(";#\r\n", *src) ? '_' : *src;
	while (n && isspace((unsigned char)dst[n - 1]))
		n--;
	dst[n] = '\0';
	while (isspace((unsigned char)dst[0]))
		memmove(dst, dst + 1, n--);
	if (!dst[0])
		snprintf(dst, size, "unknown");
}

static int svc_profile_new(void *ctx, const char *method, struct skipper_profile **out)
{
	struct skipper_policy_instance *inst = INST(ctx);
	const struct skipper_policy_env *env = inst->env;
	struct skipper_error e = { 0 };
	struct skipper_profile *p;
	char num[32], by[256], name[256];
	const char *sha;
	int rc;

	*out = NULL;
	if (env->n_layer <= 0) {
		svc_set_error(ctx, "profile_new: no model loaded");
		return SKIPPER_POLICY_ERROR;
	}
	if (!(sha = svc_model_sha256(ctx))) {
		svc_set_error(ctx, "profile_new: cannot compute the model's SHA-256");
		return SKIPPER_POLICY_ERROR;
	}
	snprintf(num, sizeof num, "%d", env->n_layer);
	snprintf(by, sizeof by, "skipper %s, policy %s %s", PACKAGE_VERSION, inst->lib->desc.name,
	         inst->lib->desc.version);
	ini_safe(by, sizeof by, by);
	ini_safe(name, sizeof name, env->model_name ? env->model_name : "");
	if ((rc = skipper_profile_new(&p, &e)) == SKIPPER_OK &&
	    (rc = skipper_profile_set(p, "profile", "model", name, &e)) == SKIPPER_OK &&
	    (rc = skipper_profile_set(p, "profile", "model_sha256", sha, &e)) == SKIPPER_OK &&
	    (rc = skipper_profile_set(p, "profile", "method", method ? method : inst->lib->desc.name, &e)) == SKIPPER_OK &&
	    (rc = skipper_profile_set(p, "profile", "n_layers", num, &e)) == SKIPPER_OK)
		rc = skipper_profile_set(p, "profile", "created_by", by, &e);
	if (rc) {
		skipper_profile_free(p);
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	*out = p;
	return SKIPPER_POLICY_OK;
}

static const char *svc_profile_get(void *ctx, const struct skipper_profile *p, const char *section,
                                   const char *key)
{
	return skipper_profile_get(p, section, key);
}

static int svc_profile_get_mask(void *ctx, const struct skipper_profile *p, const char *section,
                                const char *key, uint8_t *mask)
{
	struct skipper_error e = { 0 };
	int rc;

	if (INST(ctx)->env->n_layer <= 0) {
		/* the plugin sized mask by host->n_layer: without a model there is no size */
		svc_set_error(ctx, "profile_get_mask: no model loaded");
		return SKIPPER_POLICY_ERROR;
	}
	rc = skipper_profile_get_mask(p, section, key, mask, INST(ctx)->env->n_layer, &e);
	if (rc == SKIPPER_ERR_NOT_FOUND)
		return SKIPPER_POLICY_UNKNOWN_KEY;
	if (rc) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static const char *svc_profile_section(void *ctx, const struct skipper_profile *p, int i)
{
	return skipper_profile_section(p, i);
}

static int svc_profile_set(void *ctx, struct skipper_profile *p, const char *section, const char *key,
                           const char *value)
{
	struct skipper_error e = { 0 };
	if (skipper_profile_set(p, section, key, value, &e)) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int svc_profile_set_mask(void *ctx, struct skipper_profile *p, const char *section, const char *key,
                                const uint8_t *mask)
{
	struct skipper_error e = { 0 };
	int n = INST(ctx)->env->n_layer, pn = skipper_profile_n_layers(p);

	/* mask has host->n_layer entries: read no more, and keep the profile consistent */
	if (n <= 0) {
		svc_set_error(ctx, "profile_set_mask: no model loaded");
		return SKIPPER_POLICY_ERROR;
	}
	if (pn > 0 && pn != n) {
		svc_set_error(ctx, "profile_set_mask: profile is for %d layers, the model has %d", pn, n);
		return SKIPPER_POLICY_ERROR;
	}
	if (skipper_profile_set_mask(p, section, key, mask, n, &e)) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int svc_profile_write(void *ctx, const struct skipper_profile *p, const char *path)
{
	struct skipper_error e = { 0 };
	if (skipper_profile_write(p, path, &e)) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static void svc_profile_free(void *ctx, struct skipper_profile *p)
{
	skipper_profile_free(p);
}

static int svc_tensor_write(void *ctx, const char *path, const struct skipper_tensor *t, int n)
{
	struct skipper_error e = { 0 };
	const char **names = calloc((size_t)(n > 0 ? n : 1), sizeof *names);
	const float **data = calloc((size_t)(n > 0 ? n : 1), sizeof *data);
	int *rows = calloc((size_t)(n > 0 ? n : 1), sizeof *rows), *cols = calloc((size_t)(n > 0 ? n : 1), sizeof *cols);
	int rc = SKIPPER_ERR_NOMEM;

	if (names && data && rows && cols) {
		for (int i = 0; i < n; i++) {
			names[i] = t[i].name;
			data[i] = t[i].data;
			rows[i] = t[i].rows;
			cols[i] = t[i].cols;
		}
		rc = skipper_tensors_write(path, n, names, data, rows, cols, &e);
	} else {
		skipper_fail(&e, rc, "out of memory");
	}
	free(names);
	free(data);
	free(rows);
	free(cols);
	if (rc) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static int svc_tensor_read(void *ctx, const char *path, const char *name, float *out, size_t capacity, int *rows,
                           int *cols)
{
	struct skipper_error e = { 0 };
	int rc = skipper_policy_trusted(INST(ctx), path, &e);
	if (!rc)
		rc = skipper_tensor_read(path, name, out, capacity, rows, cols, &e);
	else if (rc == SKIPPER_ERR_NOT_FOUND)
		rc = SKIPPER_ERR_IO; /* a missing file is not a missing tensor */
	if (rc == SKIPPER_ERR_NOT_FOUND)
		return SKIPPER_POLICY_UNKNOWN_KEY;
	if (rc) {
		svc_set_error(ctx, "%s", e.msg);
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

/* Session and compute services: forward to who provides them, turn its
 * error into the plugin's. */
#define FORWARD(who, fn, ...)                                                                   \
	do {                                                                               \
		const struct skipper_policy_env *env_ = INST(ctx)->env;                    \
		struct skipper_error e_ = { 0 };                                           \
		if (!env_->fn) {                                                           \
			svc_set_error(ctx, #fn ": not available (no model loaded or not " \
			                       "supported by this engine)");              \
			return SKIPPER_POLICY_ERROR;                                       \
		}                                                                          \
		if (env_->fn(env_->who, __VA_ARGS__, &e_) != SKIPPER_OK) {             \
			svc_set_error(ctx, #fn ": %s", e_.msg[0] ? e_.msg : "failed");    \
			return SKIPPER_POLICY_ERROR;                                       \
		}                                                                          \
		return SKIPPER_POLICY_OK;                                                  \
	} while (0)

static int svc_score_mask(void *ctx, const uint8_t *skip_attn, const uint8_t *skip_mlp, const int32_t *tokens,
                          int n, int start_pos, int32_t *argmax_out)
{
	FORWARD(engine, score_mask, skip_attn, skip_mlp, tokens, n, start_pos, argmax_out);
}

static int svc_sublayer_forward(void *ctx, int kind, int layer, int n_seq, int seq_len, float *states,
                                const int32_t *pos, int n_past)
{
	FORWARD(engine, sublayer_forward, kind, layer, n_seq, seq_len, states, pos, n_past);
}

static int svc_head_argmax(void *ctx, int n, const float *states, int32_t *ids)
{
	FORWARD(engine, head_argmax, n, states, ids);
}

static int svc_time_sublayer(void *ctx, int kind, int layer, int ctx_len, double *seconds)
{
	FORWARD(engine, time_sublayer, kind, layer, ctx_len, seconds);
}

static int svc_trial(void *ctx, const struct skipper_trial *t, struct skipper_trial_result *r)
{
	FORWARD(session, trial, t, r);
}

static int svc_embed_prompt(void *ctx, const char *text, float *out)
{
	FORWARD(session, embed_prompt, text, out);
}

static const struct skipper_costs *svc_costs(void *ctx)
{
	const struct skipper_policy_env *env = INST(ctx)->env;
	const struct skipper_costs *c = NULL;
	struct skipper_error e = { 0 };
	if (!env->costs) {
		svc_set_error(ctx, "costs: not available (no model loaded or not supported by this engine)");
		return NULL;
	}
	if (env->costs(env->engine, &c, &e) != SKIPPER_OK) {
		svc_set_error(ctx, "costs: %s", e.msg[0] ? e.msg : "failed");
		return NULL;
	}
	return c;
}

const struct skipper_host skipper_policy_host_template = {
	.struct_size = sizeof(struct skipper_host),
	.abi_major = SKIPPER_POLICY_ABI_MAJOR,
	.abi_minor = SKIPPER_POLICY_ABI_MINOR,
	.model_sha256 = svc_model_sha256,
	.log = svc_log,
	.set_error = svc_set_error,
	.parse_bool = svc_parse_bool,
	.parse_int = svc_parse_int,
	.parse_double = svc_parse_double,
	.parse_layers = svc_parse_layers,
	.format_layers = svc_format_layers,
	.rng_seed = svc_rng_seed,
	.rng_u64 = svc_rng_u64,
	.rng_double = svc_rng_double,
	.now = svc_now,
	.profile_path = svc_profile_path,
	.profile_read = svc_profile_read,
	.profile_new = svc_profile_new,
	.profile_get = svc_profile_get,
	.profile_get_mask = svc_profile_get_mask,
	.profile_section = svc_profile_section,
	.profile_set = svc_profile_set,
	.profile_set_mask = svc_profile_set_mask,
	.profile_write = svc_profile_write,
	.profile_free = svc_profile_free,
	.score_mask = svc_score_mask,
	.sublayer_forward = svc_sublayer_forward,
	.head_argmax = svc_head_argmax,
	.time_sublayer = svc_time_sublayer,
	.trial = svc_trial,
	.embed_prompt = svc_embed_prompt,
	.tensor_write = svc_tensor_write,
	.tensor_read = svc_tensor_read,
	.costs = svc_costs,
};
