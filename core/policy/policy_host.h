/* core/policy/ -- the policy host (DESIGN §5), in three parts:
 * policy_loader.c finds, loads and checks plugins and lists them;
 * policy_services.c is the host-services table plugins call (it forwards
 * the session and compute services through struct skipper_policy_env);
 * policy_instance.c creates instances, pushes their INI section and wraps
 * their hooks. Also here: the built-in `none`, skip profiles, tensor files
 * and the seeded RNG. May include: core/config/, core/skipper/, error.h --
 * never the engine, which calls in. Called by the engine and the CLI.
 * Internal to libskipper.
 *
 * Search order for a policy NAME (first hit wins):
 *   1. built-in descriptors given by the engine (e.g. `none`);
 *   2. [policy] plugin_dir;  3. each entry of $SKIPPER_PLUGIN_PATH (colon
 *   list);  4. SKIPPER_PLUGINDIR ($(pkglibdir)/plugins);
 * looking for skipper-policy-NAME.so. A NAME containing '/' is a path to
 * the .so itself (absolute or relative to the working directory). */
#ifndef SKIPPER_POLICY_HOST_H
#define SKIPPER_POLICY_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "skipper/policy.h"
#include "skipper/status.h"

struct skipper_policy_search {
	const char *plugin_dir;                       /* [policy] plugin_dir; NULL or "" = none */
	const struct skipper_policy *const *builtins; /* NULL-terminated, or NULL */
};

/* ---- libraries ---- */

struct skipper_policy_lib; /* a loaded plugin or a wrapped built-in */

/* Find and load NAME. Refusals name the file and the reason: not found
 * (with every place searched), dlopen error, no skipper_policy_init, NULL
 * descriptor, ABI major/minor, struct_size too small, no name/create/destroy,
 * name differs from the file name. SKIPPER_ERR_NOT_FOUND or
 * SKIPPER_ERR_PLUGIN. */
int skipper_policy_load(const char *name, const struct skipper_policy_search *search,
                        struct skipper_policy_lib **out, struct skipper_error *err);

/* Load a plugin from exactly this file (no search). A file already loaded
 * gives the same library again (each load is unloaded once). */
int skipper_policy_load_file(const char *path, struct skipper_policy_lib **out, struct skipper_error *err);

/* Wrap a descriptor linked into the program; same checks. */
int skipper_policy_load_builtin(const struct skipper_policy *desc, struct skipper_policy_lib **out,
                                struct skipper_error *err);

/* The checked copy of the descriptor (zero-filled past the plugin's size;
 * thread_model is the one the host applies: SERIALIZE_ALL for a plugin
 * built before the field). */
const struct skipper_policy *skipper_policy_lib_desc(const struct skipper_policy_lib *lib);
/* File it came from, or "<built-in>". */
const char *skipper_policy_lib_path(const struct skipper_policy_lib *lib);
/* dlclose (after every instance is freed). NULL is fine. */
void skipper_policy_unload(struct skipper_policy_lib *lib);

/* 1 if NAME is a built-in or skipper-policy-NAME.so is in the search path
 * (no dlopen, so it is cheap enough for config validation). */
int skipper_policy_exists(const char *name, const struct skipper_policy_search *search);
/* Same, shaped for skipper_config_validate(); arg is a skipper_policy_search. */
int skipper_policy_exists_cb(const char *name, void *arg);

/* ---- listing (skipper policies) ---- */

struct skipper_policy_info {
	char *name, *version, *description, *config_help;
	char *path;  /* file, or "<built-in>" */
	char *error; /* non-NULL: the plugin was refused, and why (other fields may be NULL) */
};

/* Every policy in the search path, one per name (the first found shadows
 * the others), built-ins first, then sorted by name. Caller frees with
 * skipper_policy_list_free. */
int skipper_policy_list(const struct skipper_policy_search *search, struct skipper_policy_info **out,
                        size_t *n, struct skipper_error *err);
void skipper_policy_list_free(struct skipper_policy_info *list, size_t n);

/* ---- instances ---- */

/* What a host provides to an instance: model facts, then services of two
 * kinds, each called with its own context. The session's (profiles, the
 * model's hash, logging, whole-prompt calibration runs) get `session`;
 * the compute services, which run on one engine's backend and KV cache,
 * get `engine` (the engine sets them itself: skipper_engine_new). A NULL
 * service fails with "not available"; failures come back in err, which
 * the host turns into the plugin-visible error. Everything here must
 * outlive the instance. Zero-initialise and fill what you have. */
struct skipper_policy_env {
	/* Model facts; n_layer = 0: no model (configuration check). */
	int n_layer, n_embd, n_vocab, n_ctx;
	const char *model_name;
	uint64_t seed;            /* [generate] seed, base of the plugin RNG streams */
	int log_level;            /* messages above this level are dropped */
	const char *profile_path; /* resolved [policy] profile, or NULL */

	/* ---- session services (ctx: session) ---- */
	/* Lazy hex SHA-256 of the model, NULL on failure. */
	const char *(*model_sha256)(void *session);
	/* Without profile_path: the profile found for this model and policy
	 * (malloc'ed; the instance frees it), or NULL. Called once, when the
	 * plugin first asks. */
	char *(*find_profile)(void *session, const char *policy);
	/* Log sink (NULL: dropped). msg has no trailing newline. */
	void (*log)(void *session, int level, const char *policy, const char *msg);
	int (*trial)(void *session, const struct skipper_trial *t, struct skipper_trial_result *r,
	             struct skipper_error *err);
	int (*embed_prompt)(void *session, const char *text, float *out, struct skipper_error *err);
	void *session;

	/* ---- compute services (ctx: engine) ---- */
	int (*score_mask)(void *engine, const uint8_t *skip_attn, const uint8_t *skip_mlp,
	                  const int32_t *tokens, int n, int start_pos, int32_t *argmax_out,
	                  struct skipper_error *err);
	int (*sublayer_forward)(void *engine, int kind, int layer, int n_seq, int seq_len, float *states,
	                        const int32_t *pos, int n_past, struct skipper_error *err);
	int (*head_argmax)(void *engine, int n, const float *states, int32_t *ids, struct skipper_error *err);
	int (*time_sublayer)(void *engine, int kind, int layer, int ctx_len, double *seconds,
	                     struct skipper_error *err);
	int (*costs)(void *engine, const struct skipper_costs **out, struct skipper_error *err);
	void *engine;
};

struct skipper_policy_instance;

/* Threads: an instance is used by one thread at a time; instances may be
 * used from different threads at once. The calls below hold the library's
 * lock when the plugin declares SKIPPER_THREAD_MODEL_SERIALIZE_ALL.
 *
 * create, then push the [NAME] section of cfg key by key (file order),
 * then config_complete and refine_needs. cfg may be NULL (no keys).
 * Errors: "FILE:LINE: [NAME] KEY: message" for a key, "policy NAME (PATH):
 * create: message" otherwise; SKIPPER_ERR_CONFIG or SKIPPER_ERR_PLUGIN.
 * The instance keeps lib and env pointers. */
int skipper_policy_instance_new(struct skipper_policy_lib *lib, const struct skipper_policy_env *env,
                                const struct skipper_config *cfg, struct skipper_policy_instance **out,
                                struct skipper_error *err);
/* Calls destroy. NULL is fine. */
void skipper_policy_instance_free(struct skipper_policy_instance *inst);

/* Configuration check before any model is loaded: instance_new with no
 * model (n_layer = 0), then free. */
int skipper_policy_check_config(struct skipper_policy_lib *lib, const struct skipper_config *cfg,
                                struct skipper_error *err);
/* The keys of a policy's section that another policy's run leaves unused
 * (a configuration that keeps several policies' sections): each key name
 * and value as the plugin's config hook judges them, without the
 * section-wide consistency check of config_complete, which may need a
 * profile or a model that run will not have. */
int skipper_policy_check_keys(struct skipper_policy_lib *lib, const struct skipper_config *cfg,
                              struct skipper_error *err);

const struct skipper_policy *skipper_policy_instance_desc(const struct skipper_policy_instance *inst);
/* The plugin's state, for an engine that calls the descriptor's hooks itself. */
void *skipper_policy_instance_state(const struct skipper_policy_instance *inst);
/* What the plugin last passed to host->set_error ("" if nothing since the
 * last clear). The wrappers below clear it before each hook; an engine that
 * calls hooks directly clears it itself and reads it after a failure. */
const char *skipper_policy_instance_message(const struct skipper_policy_instance *inst);
void skipper_policy_instance_clear_message(struct skipper_policy_instance *inst);
/* Effective needs (descriptor defaults filled, refine_needs applied). */
const struct skipper_needs *skipper_policy_instance_needs(const struct skipper_policy_instance *inst);
/* Seconds spent inside this instance's hooks since creation (policy overhead). */
double skipper_policy_instance_seconds(const struct skipper_policy_instance *inst);

/* Hook wrappers: apply the core default when the hook is NULL, time the
 * call, check what the plugin returned (clamping or refusing nonsense) and
 * turn a failure into SKIPPER_ERR_PLUGIN with "policy NAME: HOOK: message". */
int skipper_policy_begin(struct skipper_policy_instance *inst, const struct skipper_request *req,
                         struct skipper_error *err);
/* plan->max_draft is clamped to [0, cap given]; masks are zeroed first. */
int skipper_policy_select_draft(struct skipper_policy_instance *inst, struct skipper_plan *plan,
                                struct skipper_error *err);
/* *stop = 1 to end the round after this step. */
int skipper_policy_should_exit(struct skipper_policy_instance *inst, const struct skipper_step *step, int *stop,
                               struct skipper_error *err);
/* tree->n = 0 and chain_node[] = -1 before the call; afterwards n <= capacity,
 * parents valid (-1 or < i), tokens in [0, n_vocab) — else an error. */
int skipper_policy_verify(struct skipper_policy_instance *inst, const struct skipper_draft *draft,
                          struct skipper_tree *tree, struct skipper_error *err);
int skipper_policy_on_accept(struct skipper_policy_instance *inst, const struct skipper_verdict *v,
                             struct skipper_error *err);
int skipper_policy_end(struct skipper_policy_instance *inst, const struct skipper_stats *stats,
                       struct skipper_error *err);
/* SKIPPER_ERR_UNSUPPORTED when the policy has no calibrate hook. */
int skipper_policy_calibrate(struct skipper_policy_instance *inst, const struct skipper_calibrate *c,
                             struct skipper_error *err);

#endif
