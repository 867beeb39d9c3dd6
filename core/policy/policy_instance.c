/* Policy host, part 3: policy instances (create, the INI section pushed
 * key by key, destroy) and the checked, timed hook wrappers the engine
 * calls. Every call into a plugin that declares
 * SKIPPER_THREAD_MODEL_SERIALIZE_ALL holds its library's lock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "base/error.h"
#include "base/signature.h"
#include "policy_internal.h"

static void enter(const struct skipper_policy_instance *inst)
{
	if (inst->lib->serialize)
		pthread_mutex_lock(&inst->lib->lock);
}

static void leave(const struct skipper_policy_instance *inst)
{
	if (inst->lib->serialize)
		pthread_mutex_unlock(&inst->lib->lock);
}

static void clear_msg(struct skipper_policy_instance *inst)
{
	inst->msg[0] = '\0';
	inst->msg_set = 0;
}

static const char *plugin_msg(const struct skipper_policy_instance *inst, int rc)
{
	if (inst->msg_set && inst->msg[0])
		return inst->msg;
	return rc == SKIPPER_POLICY_NOMEM ? "out of memory" : "failed without a message";
}

/* A hook failed: "policy NAME: HOOK: message". */
static int hook_fail(const struct skipper_policy_instance *inst, const char *hook, int rc, struct skipper_error *err)
{
	return skipper_fail(err, rc == SKIPPER_POLICY_NOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_PLUGIN,
	                    "policy %s: %s: %s", inst->lib->desc.name, hook, plugin_msg(inst, rc));
}

static int push_section(struct skipper_policy_instance *inst, const struct skipper_config *cfg,
                        struct skipper_error *err)
{
	const struct skipper_policy *d = &inst->lib->desc;
	const struct skipper_config_entry *const *ents;
	size_t n;

	if (!cfg || skipper_config_core_section(d->name))
		return SKIPPER_OK; /* e.g. [lookup]: the built-in lookup policy's keys are the engine's */
	n = skipper_config_section(cfg, d->name, &ents);
	for (size_t i = 0; i < n; i++) {
		const struct skipper_config_entry *e = ents[i];
		char where[512];
		int rc;

		if (e->line > 0)
			snprintf(where, sizeof where, "%s:%d", e->file, e->line);
		else
			snprintf(where, sizeof where, "%s", e->file);
		clear_msg(inst);
		enter(inst);
		rc = d->config ? d->config(inst->state, e->key, e->value) : SKIPPER_POLICY_UNKNOWN_KEY;
		leave(inst);
		if (rc == SKIPPER_POLICY_UNKNOWN_KEY)
			return skipper_fail(err, SKIPPER_ERR_CONFIG,
			                    "%s: [%s] %s: unknown key for policy %s (see skipper policies)", where,
			                    e->section, e->key, d->name);
		if (rc < 0)
			return skipper_fail(err, rc == SKIPPER_POLICY_NOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_CONFIG,
			                    "%s: [%s] %s: %s", where, e->section, e->key, plugin_msg(inst, rc));
	}
	return SKIPPER_OK;
}

/* [hub] trusted_keys into inst; each key must read as an Ed25519 public
 * key, so a path to a missing file is reported before anything is used. */
static int trusted_keys(struct skipper_policy_instance *inst, const struct skipper_config *cfg,
                        struct skipper_error *err)
{
	const char *v = cfg ? skipper_config_get(cfg, "hub", "trusted_keys") : NULL;
	int rc;

	if (!v || !*v)
		return SKIPPER_OK;
	if (!(inst->keys_buf = strdup(v)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	inst->n_keys = skipper_sign_split_keys(inst->keys_buf, inst->keys, SKIPPER_TRUSTED_KEYS_MAX);
	if ((rc = skipper_sign_check_keys(inst->keys, inst->n_keys, err)))
		skipper_fail_prefix(err, "[hub] trusted_keys");
	return rc;
}

int skipper_policy_trusted(const struct skipper_policy_instance *inst, const char *path, struct skipper_error *err)
{
	if (!inst->n_keys || inst->calibrating)
		return SKIPPER_OK;
	return skipper_sign_check_trusted(path, inst->keys, inst->n_keys, err);
}

/* instance_new; with complete = 0 it stops once the section's keys are
 * pushed (check_keys). */
static int instance_make(struct skipper_policy_lib *lib, const struct skipper_policy_env *env,
                         const struct skipper_config *cfg, int complete, struct skipper_policy_instance **out,
                         struct skipper_error *err)
{
	const struct skipper_policy *d = &lib->desc;
	struct skipper_policy_instance *inst;
	int rc;

	*out = NULL;
	if (!(inst = calloc(1, sizeof *inst)))
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	inst->lib = lib;
	inst->env = env;
	inst->host = skipper_policy_host_template;
	inst->host.n_layer = env->n_layer;
	inst->host.n_embd = env->n_embd;
	inst->host.n_vocab = env->n_vocab;
	inst->host.n_ctx = env->n_ctx;
	inst->host.model_name = env->model_name ? env->model_name : "";
	if (complete && (rc = trusted_keys(inst, cfg, err))) {
		free(inst->keys_buf);
		free(inst);
		return rc;
	}

	clear_msg(inst);
	enter(inst);
	rc = d->create(&inst->host, inst, &inst->state);
	leave(inst);
	if (rc < 0) {
		rc = skipper_fail(err, rc == SKIPPER_POLICY_NOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_PLUGIN,
		                  "policy %s (%s): create: %s", d->name, lib->path, plugin_msg(inst, rc));
		free(inst->keys_buf);
		free(inst);
		return rc;
	}
	inst->created = 1;
	if ((rc = push_section(inst, cfg, err)))
		goto fail;
	if (!complete) {
		*out = inst;
		return SKIPPER_OK;
	}
	if (d->config_complete) {
		clear_msg(inst);
		enter(inst);
		rc = d->config_complete(inst->state);
		leave(inst);
		if (rc < 0) {
			rc = skipper_fail(err, rc == SKIPPER_POLICY_NOMEM ? SKIPPER_ERR_NOMEM : SKIPPER_ERR_CONFIG,
			                  "policy %s: [%s] section: %s", d->name, d->name, plugin_msg(inst, rc));
			goto fail;
		}
	}
	inst->needs.flags = d->needs;
	inst->needs.top_k = d->top_k;
	inst->needs.prompt_rows = d->prompt_rows;
	if (d->refine_needs) {
		clear_msg(inst);
		enter(inst);
		rc = d->refine_needs(inst->state, &inst->needs);
		leave(inst);
		if (rc < 0) {
			rc = hook_fail(inst, "refine_needs", rc, err);
			goto fail;
		}
	}
	if (!(inst->needs.flags & SKIPPER_NEED_TOPK))
		inst->needs.top_k = 1;
	else if (inst->needs.top_k <= 0)
		inst->needs.top_k = 10;
	if (inst->needs.top_k > SKIPPER_TOPK_MAX)
		inst->needs.top_k = SKIPPER_TOPK_MAX;
	if (inst->needs.prompt_rows <= 0)
		inst->needs.prompt_rows = 1;
	*out = inst;
	return SKIPPER_OK;
fail:
	skipper_policy_instance_free(inst);
	return rc;
}

int skipper_policy_instance_new(struct skipper_policy_lib *lib, const struct skipper_policy_env *env,
                                const struct skipper_config *cfg, struct skipper_policy_instance **out,
                                struct skipper_error *err)
{
	return instance_make(lib, env, cfg, 1, out, err);
}

void skipper_policy_instance_free(struct skipper_policy_instance *inst)
{
	if (!inst)
		return;
	if (inst->created) {
		enter(inst);
		inst->lib->desc.destroy(inst->state);
		leave(inst);
	}
	free(inst->found_profile);
	free(inst->keys_buf);
	free(inst);
}

int skipper_policy_check_config(struct skipper_policy_lib *lib, const struct skipper_config *cfg,
                                struct skipper_error *err)
{
	/* n_layer = 0 tells the plugin there is no model; the profile setting
	 * is passed (unresolved) so that checks of "is there a profile" agree
	 * with the real run. */
	struct skipper_policy_env no_model = { 0 };
	struct skipper_policy_instance *inst;
	int rc;

	no_model.profile_path = cfg ? skipper_config_get(cfg, "policy", "profile") : NULL;
	rc = skipper_policy_instance_new(lib, &no_model, cfg, &inst, err);
	if (rc == SKIPPER_OK)
		skipper_policy_instance_free(inst);
	return rc;
}

int skipper_policy_check_keys(struct skipper_policy_lib *lib, const struct skipper_config *cfg,
                              struct skipper_error *err)
{
	struct skipper_policy_env no_model = { 0 };
	struct skipper_policy_instance *inst;
	int rc = instance_make(lib, &no_model, cfg, 0, &inst, err);
	if (rc == SKIPPER_OK)
		skipper_policy_instance_free(inst);
	return rc;
}

const struct skipper_policy *skipper_policy_instance_desc(const struct skipper_policy_instance *inst)
{
	return &inst->lib->desc;
}

void *skipper_policy_instance_state(const struct skipper_policy_instance *inst)
{
	return inst->state;
}

const char *skipper_policy_instance_message(const struct skipper_policy_instance *inst)
{
	return inst->msg_set ? inst->msg : "";
}

void skipper_policy_instance_clear_message(struct skipper_policy_instance *inst)
{
	clear_msg(inst);
}

const struct skipper_needs *skipper_policy_instance_needs(const struct skipper_policy_instance *inst)
{
	return &inst->needs;
}

double skipper_policy_instance_seconds(const struct skipper_policy_instance *inst)
{
	return inst->seconds;
}

/* ---------------------------------------------------------- hook wrappers */

#define TIMED(inst, call)                                            \
	({                                                           \
		enter(inst);                                         \
		double t0_ = skipper_policy_now();                   \
		clear_msg(inst);                                     \
		int rc_ = (call);                                    \
		(inst)->seconds += skipper_policy_now() - t0_;       \
		leave(inst);                                         \
		rc_;                                                 \
	})

int skipper_policy_begin(struct skipper_policy_instance *inst, const struct skipper_request *req,
                         struct skipper_error *err)
{
	int rc;
	if (!inst->lib->desc.begin)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.begin(inst->state, req));
	return rc < 0 ? hook_fail(inst, "begin", rc, err) : SKIPPER_OK;
}

int skipper_policy_select_draft(struct skipper_policy_instance *inst, struct skipper_plan *plan,
                                struct skipper_error *err)
{
	int cap = plan->max_draft > 0 ? plan->max_draft : 0;
	int rc;

	memset(plan->skip_attn, 0, (size_t)plan->n_layer);
	memset(plan->skip_mlp, 0, (size_t)plan->n_layer);
	if (!inst->lib->desc.select_draft) {
		plan->max_draft = 0;
		return SKIPPER_OK;
	}
	rc = TIMED(inst, inst->lib->desc.select_draft(inst->state, plan));
	if (rc < 0)
		return hook_fail(inst, "select_draft", rc, err);
	if (plan->max_draft < 0)
		plan->max_draft = 0;
	if (plan->max_draft > cap)
		plan->max_draft = cap;
	for (int l = 0; l < plan->n_layer; l++) {
		plan->skip_attn[l] = plan->skip_attn[l] != 0;
		plan->skip_mlp[l] = plan->skip_mlp[l] != 0;
	}
	return SKIPPER_OK;
}

int skipper_policy_should_exit(struct skipper_policy_instance *inst, const struct skipper_step *step, int *stop,
                               struct skipper_error *err)
{
	int rc;
	*stop = 0;
	if (!inst->lib->desc.should_exit)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.should_exit(inst->state, step));
	if (rc < 0)
		return hook_fail(inst, "should_exit", rc, err);
	*stop = rc > 0;
	return SKIPPER_OK;
}

int skipper_policy_verify(struct skipper_policy_instance *inst, const struct skipper_draft *draft,
                          struct skipper_tree *tree, struct skipper_error *err)
{
	const char *name = inst->lib->desc.name;
	int n_vocab = inst->env->n_vocab;
	int rc;

	tree->n = 0;
	if (tree->chain_node)
		for (int i = 0; i < tree->capacity; i++)
			tree->chain_node[i] = -1;
	if (!inst->lib->desc.verify)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.verify(inst->state, draft, tree));
	if (rc < 0)
		return hook_fail(inst, "verify", rc, err);
	if (tree->n < 0 || tree->n > tree->capacity)
		return skipper_fail(err, SKIPPER_ERR_PLUGIN, "policy %s: verify: tree of %d nodes, capacity is %d", name,
		                    tree->n, tree->capacity);
	for (int i = 0; i < tree->n; i++) {
		if (tree->parent[i] < -1 || tree->parent[i] >= i)
			return skipper_fail(err, SKIPPER_ERR_PLUGIN,
			                    "policy %s: verify: node %d has parent %d (must be -1 or an earlier node)", name,
			                    i, tree->parent[i]);
		if (tree->tokens[i] < 0 || (n_vocab > 0 && tree->tokens[i] >= n_vocab))
			return skipper_fail(err, SKIPPER_ERR_PLUGIN, "policy %s: verify: node %d has token %d outside the vocabulary",
			                    name, i, tree->tokens[i]);
	}
	if (tree->chain_node)
		for (int j = 0; j < draft->n && j < tree->capacity; j++)
			if (tree->chain_node[j] < -1 || tree->chain_node[j] >= tree->n)
				return skipper_fail(err, SKIPPER_ERR_PLUGIN,
				                    "policy %s: verify: chain_node[%d] = %d is not a node", name, j,
				                    tree->chain_node[j]);
	return SKIPPER_OK;
}

int skipper_policy_on_accept(struct skipper_policy_instance *inst, const struct skipper_verdict *v,
                             struct skipper_error *err)
{
	int rc;
	if (!inst->lib->desc.on_accept)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.on_accept(inst->state, v));
	return rc < 0 ? hook_fail(inst, "on_accept", rc, err) : SKIPPER_OK;
}

int skipper_policy_end(struct skipper_policy_instance *inst, const struct skipper_stats *stats,
                       struct skipper_error *err)
{
	int rc;
	if (!inst->lib->desc.end)
		return SKIPPER_OK;
	rc = TIMED(inst, inst->lib->desc.end(inst->state, stats));
	return rc < 0 ? hook_fail(inst, "end", rc, err) : SKIPPER_OK;
}

int skipper_policy_calibrate(struct skipper_policy_instance *inst, const struct skipper_calibrate *c,
                             struct skipper_error *err)
{
	int rc;
	if (!inst->lib->desc.calibrate)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "policy %s has no offline calibration",
		                    inst->lib->desc.name);
	inst->calibrating = 1;
	rc = TIMED(inst, inst->lib->desc.calibrate(inst->state, c));
	inst->calibrating = 0;
	return rc < 0 ? hook_fail(inst, "calibrate", rc, err) : SKIPPER_OK;
}
