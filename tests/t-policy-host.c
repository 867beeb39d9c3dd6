/* The real host services table as a plugin sees it: model facts, parsers,
 * RNG, clock, log, profiles, and the forwarding of compute services to the
 * engine (with its errors turned into the plugin's). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "policy/policy_host.h"
#include "policy/profile.h"
#include "tap.h"

/* What the test policy's create() saw. */
static const struct skipper_host *H;
static void *C;

static int svc_create(const struct skipper_host *h, void *ctx, void **state)
{
	H = h;
	C = ctx;
	*state = NULL;
	return SKIPPER_POLICY_OK;
}

static void svc_destroy(void *state)
{
}

static const struct skipper_policy svc_desc = {
	.name = "svc",
	.needs = SKIPPER_NEED_TOPK,
	.create = svc_create,
	.destroy = svc_destroy,
};

/* ---- a fake engine ---- */
static char sha[65];
static char logged[512];
static int log_level_seen = -1;
static int score_calls;
static int last_start;

static const char *eng_sha(void *engine)
{
	return sha;
}

static void eng_log(void *engine, int level, const char *policy, const char *msg)
{
	snprintf(logged, sizeof logged, "%s: %s", policy, msg);
	log_level_seen = level;
}

static int eng_score(void *engine, const uint8_t *a, const uint8_t *m, const int32_t *t, int n, int start,
                     int32_t *out, struct skipper_error *err)
{
	score_calls++;
	last_start = start;
	if (n > 4)
		return skipper_fail(err, SKIPPER_ERR_RANGE, "too many rows (%d)", n);
	for (int i = 0; i < n; i++)
		out[i] = t[i] + (a && a[0]);
	return SKIPPER_OK;
}

static int has(const char *hay, const char *needle)
{
	int r = hay && strstr(hay, needle) != NULL;
	if (!r)
		diag("'%s' not in: %s", needle, hay ? hay : "(null)");
	return r;
}

int main(void)
{
	struct skipper_policy_lib *lib;
	struct skipper_policy_instance *inst, *inst2;
	struct skipper_error err = { 0 };
	struct skipper_policy_env env = {
		.n_layer = 4, .n_embd = 2, .n_vocab = 10, .n_ctx = 64, .model_name = "tiny",
		.model_sha256 = eng_sha, .seed = 7, .log = eng_log, .log_level = SKIPPER_LOG_INFO,
		.score_mask = eng_score,
	};
	char dir[64], path[128];
	int64_t i64;
	double d;
	int b, rc;

	memset(sha, 'c', 64);
	strcpy(dir, "/tmp/t-policy-host.XXXXXX");
	if (!mkdtemp(dir))
		return 99;
	if (skipper_policy_load_builtin(&svc_desc, &lib, &err) ||
	    skipper_policy_instance_new(lib, &env, NULL, &inst, &err)) {
		printf("Bail out! %s\n", err.msg);
		return 1;
	}

	/* facts and table */
	ok(H->n_layer == 4 && H->n_embd == 2 && H->n_vocab == 10 && H->n_ctx == 64, "model facts");
	is_str(H->model_name, "tiny", "model name");
	ok(H->struct_size == sizeof *H && H->abi_major == SKIPPER_POLICY_ABI_MAJOR, "table size and ABI");
	ok(SKIPPER_HOST_HAS(H, embed_prompt), "SKIPPER_HOST_HAS");
	is_str(H->model_sha256(C), sha, "model_sha256 forwarded");
	ok(skipper_policy_instance_state(inst) == NULL, "state accessor");
	ok(skipper_policy_instance_needs(inst)->top_k == 10 && skipper_policy_instance_needs(inst)->prompt_rows == 1,
	   "needs defaults: top_k 10 with NEED_TOPK, one prompt row");

	/* parsers and their messages */
	ok(H->parse_bool(C, "On", &b) == 0 && b == 1, "parse_bool");
	ok(H->parse_bool(C, "maybe", &b) == SKIPPER_POLICY_ERROR &&
	       has(skipper_policy_instance_message(inst), "expected a boolean") &&
	       has(skipper_policy_instance_message(inst), "'maybe'"),
	   "parse_bool error");
	ok(H->parse_int(C, "12", 0, 20, &i64) == 0 && i64 == 12, "parse_int");
	ok(H->parse_int(C, "21", 0, 20, &i64) < 0 && has(skipper_policy_instance_message(inst), "[0, 20], got '21'"),
	   "parse_int bounds");
	ok(H->parse_int(C, "1x", INT64_MIN, INT64_MAX, &i64) < 0 &&
	       has(skipper_policy_instance_message(inst), "expected an integer, got '1x'"),
	   "parse_int syntax");
	ok(H->parse_double(C, "0.25", 0, 1, &d) == 0 && d == 0.25, "parse_double");
	ok(H->parse_double(C, "nan", 0, 1, &d) < 0 && H->parse_double(C, "inf", 0, INFINITY, &d) < 0,
	   "parse_double refuses nan and inf");
	{
		uint8_t m[4];
		char buf[32];
		ok(H->parse_layers(C, "1-2", m, 4) == 0 && m[1] && m[2] && !m[3], "parse_layers");
		ok(H->parse_layers(C, "4", m, 4) < 0 && has(skipper_policy_instance_message(inst), "model has 4 layers"),
		   "parse_layers range");
		H->format_layers(C, m, 4, buf, sizeof buf);
		is_str(buf, "1-2", "format_layers");
	}
	skipper_policy_instance_clear_message(inst);
	is_str(skipper_policy_instance_message(inst), "", "message cleared");

	/* RNG: reproducible per seed, name and stream */
	{
		struct skipper_rng r1, r2, r3;
		int same = 1, differ = 0, in_range = 1;
		H->rng_seed(C, &r1, 5);
		H->rng_seed(C, &r2, 5);
		H->rng_seed(C, &r3, 6);
		for (int i = 0; i < 100; i++) {
			uint64_t a = H->rng_u64(C, &r1), b2 = H->rng_u64(C, &r2), c = H->rng_u64(C, &r3);
			same &= a == b2;
			differ |= a != c;
			double x = H->rng_double(C, &r1);
			(void)H->rng_double(C, &r2);
			(void)H->rng_double(C, &r3);
			in_range &= x >= 0.0 && x < 1.0;
		}
		ok(same, "same seed and stream: same sequence");
		ok(differ, "another stream: another sequence");
		ok(in_range, "rng_double in [0, 1)");
	}
	{
		double t0 = H->now(C), t1 = H->now(C);
		ok(t1 >= t0 && t0 > 0, "monotonic clock");
	}

	/* log */
	H->log(C, SKIPPER_LOG_WARN, "%d masks", 3);
	is_str(logged, "svc: 3 masks", "log reaches the engine with the policy name");
	logged[0] = '\0';
	H->log(C, SKIPPER_LOG_DEBUG, "noise");
	is_str(logged, "", "levels above log_level are dropped");

	/* profiles through the host */
	{
		struct skipper_profile *p, *q;
		uint8_t m[4] = { 0, 1, 1, 0 }, got[4];
		snprintf(path, sizeof path, "%s/p.ini", dir);
		rc = H->profile_new(C, "bo-static", &p);
		ok(rc == 0, "profile_new");
		if (rc == 0) {
			is_str(H->profile_get(C, p, "profile", "model_sha256"), sha, "profile_new: model hash");
			is_str(H->profile_get(C, p, "profile", "n_layers"), "4", "profile_new: layer count");
			ok(has(H->profile_get(C, p, "profile", "created_by"), "policy svc"), "profile_new: created_by");
			ok(H->profile_set_mask(C, p, "mask", "attn", m) == 0 && H->profile_set(C, p, "mask", "mlp", "3") == 0,
			   "profile_set[_mask]");
			ok(H->profile_write(C, p, path) == 0, "profile_write");
			H->profile_free(C, p);
		}
		rc = H->profile_read(C, path, &q);
		ok(rc == 0, "profile_read validates against the model");
		if (rc == 0) {
			ok(H->profile_get_mask(C, q, "mask", "attn", got) == 0 && got[1] && got[2] && !got[0], "mask read back");
			ok(H->profile_get_mask(C, q, "mask", "none", got) == SKIPPER_POLICY_UNKNOWN_KEY, "absent key");
			is_str(H->profile_section(C, q, 1), "mask", "profile_section");
			H->profile_free(C, q);
		}
		memset(sha, 'd', 64);
		rc = H->profile_read(C, path, &q);
		ok(rc < 0 && has(skipper_policy_instance_message(inst), path) &&
		       has(skipper_policy_instance_message(inst), "dddddddd"),
		   "profile for another model refused with both hashes");
		memset(sha, 'c', 64);
	}

	/* tensors */
	{
		float a[4] = { 1, 2, 3, 4 }, got[4];
		struct skipper_tensor t = { "anchors", a, 2, 2 };
		int r, c;
		snprintf(path, sizeof path, "%s/a.safetensors", dir);
		ok(H->tensor_write(C, path, &t, 1) == 0, "tensor_write");
		ok(H->tensor_read(C, path, "anchors", got, 4, &r, &c) == 0 && r == 2 && c == 2 && got[3] == 4,
		   "tensor_read");
		ok(H->tensor_read(C, path, "labels", NULL, 0, &r, &c) == SKIPPER_POLICY_UNKNOWN_KEY, "absent tensor");
		ok(H->tensor_read(C, "/nonexistent.st", "anchors", NULL, 0, &r, &c) == SKIPPER_POLICY_ERROR &&
		       has(skipper_policy_instance_message(inst), "/nonexistent.st"),
		   "missing file is an error");
	}

	/* compute services */
	{
		int32_t t[5] = { 1, 2, 3, 4, 5 }, out[5];
		uint8_t a[4] = { 1, 0, 0, 0 };
		rc = H->score_mask(C, a, NULL, t, 3, 9, out);
		ok(rc == 0 && score_calls == 1 && last_start == 9 && out[0] == 2 && out[2] == 4, "score_mask forwarded");
		rc = H->score_mask(C, a, NULL, t, 5, 9, out);
		ok(rc < 0 && has(skipper_policy_instance_message(inst), "score_mask: too many rows (5)"),
		   "engine error becomes the plugin's message");
		float st[2] = { 0, 0 };
		int32_t pos = 0;
		rc = H->sublayer_forward(C, SKIPPER_SUBLAYER_MLP, 0, 1, 1, st, &pos, 0);
		ok(rc < 0 && has(skipper_policy_instance_message(inst), "sublayer_forward: not available"),
		   "missing engine service: clear error, no crash");
		struct skipper_trial_result tr;
		struct skipper_trial tt = { .autoregressive = 1 };
		ok(H->trial(C, &tt, &tr) < 0 && H->embed_prompt(C, "x", st) < 0 && H->head_argmax(C, 1, st, &pos) < 0,
		   "other missing services fail too");
	}

	/* a second instance has its own context */
	rc = skipper_policy_instance_new(lib, &env, NULL, &inst2, &err);
	ok(rc == 0 && C != (void *)inst, "second instance, second context");
	if (rc == 0) {
		H->set_error(C, "only here");
		ok(strcmp(skipper_policy_instance_message(inst2), "only here") == 0 &&
		       strcmp(skipper_policy_instance_message(inst), "only here") != 0,
		   "errors stay with their instance");
		skipper_policy_instance_free(inst2);
	}

	skipper_policy_instance_free(inst);
	skipper_policy_unload(lib);
	snprintf(path, sizeof path, "rm -rf %s", dir);
	if (system(path) != 0)
		diag("cleanup failed");
	return tap_done();
}
