/* skipper policy plugin ABI (see skipper-policy(3), skipper-policies(7)).
 *
 * A policy is a shared object named skipper-policy-NAME.so exporting exactly
 * one symbol, skipper_policy_init, which returns a static descriptor. The
 * engine hands the plugin a table of host services and an opaque host
 * context; the plugin never links against libskipper, so the same .so runs
 * under the engine and under a test's mock host.
 *
 * Stability rules (ABI major 1):
 *  - Every struct here is append-only: new members go at the end, nothing is
 *    ever removed, reordered or retyped. Such additions bump
 *    SKIPPER_POLICY_ABI_MINOR; anything else bumps the major.
 *  - The host loads a plugin iff abi_major == host major and abi_minor <=
 *    host minor, then copies min(struct_size, sizeof its own descriptor) into
 *    a zeroed descriptor, so members an older plugin does not know read as
 *    NULL/0 (= "not provided").
 *  - Structs passed to hooks are engine-owned and only valid during the call;
 *    a plugin copies what it keeps. Members a plugin does not know are never
 *    read by it, so hook structs carry no size field.
 *  - Structs a plugin hands to a host service (struct skipper_trial) carry
 *    no size field either: the host reads a member added in minor M only
 *    when the plugin's descriptor says abi_minor >= M. Everything in this
 *    file as first released is minor 0.
 *  - Plugins never print, exit or abort: they report through
 *    host->set_error() and a negative return.
 *  - SKIPPER_POLICY_REGISTER fills in abi_major, abi_minor and struct_size
 *    (from this header, as the plugin is built): leave them out of the
 *    descriptor. One that sets them by hand keeps its values.
 *
 * Self-contained on purpose (stdint.h and stddef.h only): a third party
 * builds against this header and skipper-policy.pc alone. */
#ifndef SKIPPER_POLICY_H
#define SKIPPER_POLICY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SKIPPER_POLICY_ABI_MAJOR 1
#define SKIPPER_POLICY_ABI_MINOR 3

/* Most top-k entries a draft step can carry (the backend limit). */
#define SKIPPER_TOPK_MAX 64

/* Return values of plugin functions. Any other negative value is an error as
 * well; the message is whatever the plugin passed to host->set_error(). */
#define SKIPPER_POLICY_OK 0
#define SKIPPER_POLICY_ERROR (-1)       /* failed; message set with set_error */
#define SKIPPER_POLICY_UNKNOWN_KEY (-2) /* config(): key not recognised */
#define SKIPPER_POLICY_NOMEM (-3)       /* allocation failed */

/* should_exit() results. */
#define SKIPPER_DRAFT_CONTINUE 0
#define SKIPPER_DRAFT_STOP 1

/* Sub-layer kinds for sublayer_forward / time_sublayer. */
#define SKIPPER_SUBLAYER_ATTN 0
#define SKIPPER_SUBLAYER_MLP 1

/* Log levels for host->log. */
#define SKIPPER_LOG_ERROR 0
#define SKIPPER_LOG_WARN 1
#define SKIPPER_LOG_INFO 2
#define SKIPPER_LOG_DEBUG 3

/* ---- what the engine must capture for the policy (descriptor.needs) ---- */

/* begin(): mean over all prompt positions of the post-final-norm hidden
 * state (n_embd floats) in request->prompt_mean. (knn-router) */
#define SKIPPER_NEED_PROMPT_MEAN (UINT64_C(1) << 0)
/* begin(): residual states of the last prompt_rows prompt rows, and
 * on_accept(): of the last committed row (the row that produced the bonus
 * token), in the states member. (clasp) */
#define SKIPPER_NEED_LAST_LAYER_STATES (UINT64_C(1) << 1)
/* on_accept(): states of every committed row of the round: the round's
 * input row plus the accepted drafts (n_accepted + 1 rows). Implies the
 * begin() capture of LAST_LAYER_STATES. (knapspec) */
#define SKIPPER_NEED_ACCEPTED_STATES (UINT64_C(1) << 2)
/* Modifier for the two flags above: capture at all 2L+1 sub-layer
 * boundaries (embedding, after attn 0, after mlp 0, after attn 1, ...)
 * instead of the L+1 layer boundaries (embedding, after layer 0, ...).
 * (knapspec) */
#define SKIPPER_NEED_SUBLAYER_STATES (UINT64_C(1) << 3)
/* should_exit()/verify(): top_k ids and probabilities per draft step instead
 * of top-1 only. (swift tree verification) */
#define SKIPPER_NEED_TOPK (UINT64_C(1) << 4)

struct skipper_needs {
	uint64_t flags;  /* SKIPPER_NEED_* */
	int top_k;       /* with SKIPPER_NEED_TOPK: 1..SKIPPER_TOPK_MAX (0 = 10) */
	int prompt_rows; /* rows captured at begin() with the *_STATES flags (0 = 1) */
};

/* Captured residual-stream states, engine-owned, valid during the hook. */
struct skipper_states {
	int n_rows;           /* rows captured */
	int n_points;         /* per row: n_layer + 1, or 2 * n_layer + 1 with SUBLAYER_STATES */
	int n_embd;
	const int32_t *pos;   /* [n_rows] sequence positions of the rows, ascending */
	const int32_t *token; /* [n_rows] token at each row */
	const float *data;    /* [n_rows][n_points][n_embd]; point 0 = token embedding */
};

/* ---- data handed to the hooks ---- */

/* begin(): one generation request, after the full-model prefill. */
struct skipper_request {
	uint64_t id;                  /* increases per request within a process */
	const int32_t *prompt;        /* [n_prompt] prompt token ids (template applied) */
	int n_prompt;
	int n_layer;
	int max_tokens;               /* generation budget of this request */
	int greedy;                   /* 1: greedy acceptance; 0: speculative sampling */
	const float *prompt_mean;     /* [n_embd] with SKIPPER_NEED_PROMPT_MEAN, else NULL */
	const struct skipper_states *states; /* last prompt rows with *_STATES needs, else NULL */
};

/* select_draft(): the plan of the next draft round. The engine zeroes both
 * masks before each call; the policy sets 1 for each sub-layer to skip. */
struct skipper_plan {
	int n_layer;
	uint8_t *skip_attn;   /* [n_layer], engine-owned, 1 = skip attention of layer l */
	uint8_t *skip_mlp;    /* [n_layer], engine-owned, 1 = skip MLP of layer l */
	int max_draft;        /* in: engine cap (budget, context left); out: policy's
	                         cap, <= the cap; 0 = no draft (one plain full-model step) */
	int capture;          /* in: 1 if needs ask for verify captures; the policy may
	                         clear it to skip them this round */
	int round;            /* 0-based round index within the request */
	int n_committed;      /* tokens in the KV cache (prompt + committed output) */
	int n_generated;      /* output tokens so far in this request */
};

/* should_exit(): one draft step just ran. */
struct skipper_step {
	int index;                /* 0-based step within the round */
	int32_t token;            /* the chain token drafted at this step */
	float prob;               /* its probability under the draft's raw softmax */
	int top_k;                /* entries below (>= 1) */
	const int32_t *top_ids;   /* [top_k] descending probability */
	const float *top_probs;   /* [top_k] raw softmax (temperature 1); [0] = p_max */
	int max_draft;            /* the round's cap; the engine stops there anyway */
	int is_eos;               /* token is an end-of-generation token (engine stops) */
	int n_committed;
};

/* verify(): the finished draft chain of this round. */
struct skipper_draft {
	int32_t root;             /* input token of the round (last committed token) */
	int n;                    /* chain length (>= 1 when verify is called) */
	const int32_t *tokens;    /* [n] chain tokens */
	const float *probs;       /* [n] draft probability of each chain token */
	int top_k;
	const int32_t *top_ids;   /* [n][top_k] */
	const float *top_probs;   /* [n][top_k] */
	int n_committed;
};

/* verify(): the candidates to verify. Leaving n = 0 verifies the chain.
 * Otherwise node i has token tokens[i] and parent parent[i]: -1 = the root
 * (the round's input token), else an index < i. Greedy verification accepts
 * the longest root path whose every token equals the full model's argmax.
 * With sampling, only nodes whose parent is the root or a chain node (the
 * draft distribution is known there) are kept, in the order given, and the
 * tokens of a chain node's siblings are redrawn without replacement from
 * that depth's draft distribution: multi-candidate rejection sampling is
 * exact only for candidates drawn so. */
struct skipper_tree {
	int capacity;             /* entries available in tokens/parent */
	int n;                    /* out: nodes used (0 = chain) */
	int32_t *tokens;          /* [capacity], engine-owned */
	int32_t *parent;          /* [capacity], engine-owned */
	int32_t *chain_node;      /* [capacity] out, optional: node index of chain token j
	                             (-1 = not in tree); engine pre-fills -1 */
};

/* on_accept(): outcome of one verification. */
struct skipper_verdict {
	int round;
	int n_drafted;            /* chain tokens drafted this round */
	int n_verified;           /* candidates verified (tree nodes or chain length) */
	int n_accepted;           /* candidates accepted, 0..n_drafted */
	const int32_t *accepted;  /* [n_accepted] accepted tokens in order */
	const int32_t *accepted_nodes; /* [n_accepted] their node indices (chain: 0..n-1) */
	int32_t bonus;            /* full-model token after them; -1 if generation ended */
	int n_committed;          /* KV length after compaction (bonus not yet in it) */
	const int32_t *generated; /* [n_generated] all output tokens so far, bonus included */
	int n_generated;
	double draft_seconds;     /* this round */
	double verify_seconds;
	const struct skipper_states *states; /* per needs, else NULL */
	/* minor 1: candidates that came from context lookup ([policy] lookup)
	 * rather than from this policy's draft. n_drafted, n_accepted and
	 * accepted[] count only the policy's own tokens; tokens committed from
	 * lookup candidates are in generated[] and states. */
	int n_lookup;             /* lookup candidates verified this round */
	int n_lookup_accepted;    /* of them, accepted */
};

/* end(): totals of the request (DESIGN §4). */
struct skipper_stats {
	int n_prompt;
	int n_generated;
	int rounds;
	int verify_passes;
	int drafted;
	int accepted;
	double seconds;           /* wall time of the request */
	double prefill_seconds;
	double draft_seconds;
	double verify_seconds;
	double policy_seconds;    /* time inside this policy's hooks */
};

/* calibrate(): offline search (skipper calibrate). The policy runs trials
 * through host->trial / host->embed_prompt and writes a profile to output. */
struct skipper_calibrate {
	int n_prompts;
	const char *const *prompts;    /* [n_prompts] user texts (services apply the template) */
	const char *const *categories; /* [n_prompts] labels (domain, Spec-Bench category), or NULL */
	const char *output;            /* profile path to write */
	int iterations;                /* search budget; 0 = the policy's default */
	int max_tokens;                /* per trial prompt; 0 = [generate] max_tokens */
	uint64_t seed;
	/* Progress report (may be NULL): done of total units, what = short label. */
	void (*progress)(void *progress_ctx, int done, int total, const char *what);
	void *progress_ctx;
};

/* host->trial(): one SSD run over some prompts with a fixed mask. */
struct skipper_trial {
	const uint8_t *skip_attn; /* [n_layer]; NULL = skip none */
	const uint8_t *skip_mlp;  /* [n_layer]; NULL = skip none */
	int autoregressive;       /* 1: plain decoding, masks ignored (the baseline) */
	int max_draft;            /* draft length cap (0 = 4) */
	double threshold;         /* stop drafting when p_max < threshold (0 = off) */
	int n_prompts;
	const char *const *prompts; /* [n_prompts] user texts */
	int max_tokens;           /* per prompt; 0 = [generate] max_tokens */
	/* Adaptive draft exit (bo-static's search runs the complete method).
	 * With adaptive = 1, threshold is the initial γ and moves after every
	 * verification round by the Self-SD rule (skipper-policy-bo-static(5)):
	 * AR = first round of a prompt ? AR_e : beta1*AR + (1-beta1)*AR_e,
	 * γ = beta2*γ + (1-beta2)*(AR <= target_alpha ? γ+epsilon : γ-epsilon);
	 * γ carries over between the prompts of one trial. 0 below = default.
	 * Appended members: callers zero-initialise the struct. */
	int adaptive;
	double target_alpha;      /* α (0 = 0.9) */
	double epsilon;           /* step (0 = 0.01) */
	double beta1;             /* AR smoothing (0 = 0.5) */
	double beta2;             /* γ smoothing (0 = 0.9) */
};

struct skipper_trial_result {
	int n_generated;
	double seconds;           /* decode wall time, device-synchronised, prefill excluded */
	double tokens_per_s;
	int rounds;
	int drafted;
	int accepted;
	double alpha;             /* accepted / drafted (0 if none drafted) */
	double mean_accepted;     /* M = generated / verify passes */
};

/* host->costs() (minor 1): what computing costs on this machine, measured
 * once per model, backend and thread count, in units of one decode step
 * (one token through the full model). A round that drafts k tokens with a
 * skip set and verifies them costs k * draft + verify[k + 1] steps and
 * yields its accepted tokens plus one: drafting pays only while that
 * yield per step beats 1. On a GPU verify[n] stays near 1 for n up to
 * dozens of rows; on a CPU it grows much sooner. */
#define SKIPPER_COST_MAX_ROWS 32
struct skipper_costs {
	int n_max;                /* verify[1..n_max] are filled */
	double verify[SKIPPER_COST_MAX_ROWS + 1]; /* full-model pass over n rows (the root and
	                                             n - 1 candidates); verify[1] = 1 */
	double step_seconds;      /* one decode step; follows the plain rounds
	                             decoded so far (the rest stays as measured) */
	double head;              /* share of a step outside the layers: embedding, final
	                             norm, LM head, top-k */
	double attn, mlp;         /* share of a step in one layer's attention / MLP
	                             sub-layer (mean over the layers) */
	double draft_head;        /* head share in a draft step ([generate] draft_vocab
	                             can make it smaller than head) */
	/* minor 3: what the context adds. Attention reads the K/V of every
	 * committed token, so a pass costs more the longer the context: the
	 * figures above are priced at a context of ctx committed tokens (the
	 * host prices them at the request's own context every round, attn
	 * taking what the context adds), and each token more adds ctx_row
	 * steps to a pass of one row and ctx_extra_row to each further row
	 * (0: not measured). */
	int ctx;
	double ctx_row, ctx_extra_row;
};

/* Cost of one draft step with these skip masks ([n_layer] each, NULL =
 * none skipped), in decode steps. */
static inline double skipper_draft_cost(const struct skipper_costs *c, int n_layer, const uint8_t *skip_attn,
                                        const uint8_t *skip_mlp)
{
	double d = c->draft_head;
	for (int l = 0; l < n_layer; l++)
		d += (skip_attn && skip_attn[l] ? 0 : c->attn) + (skip_mlp && skip_mlp[l] ? 0 : c->mlp);
	return d;
}

/* host->tensor_write(): one named F32 matrix. */
struct skipper_tensor {
	const char *name;
	const float *data;        /* [rows][cols] */
	int rows, cols;
};

/* Small RNG state the plugin owns (inside its state); driven by host->rng_*. */
struct skipper_rng {
	uint64_t s[4];
};

struct skipper_profile; /* opaque, host-owned */

/* ---- host services ----
 * Every function takes the host context given to create(). All are
 * available in every host of a given minor; compute services fail with an
 * error (never crash) where no model is loaded. The table and the context
 * outlive the state. Calls come from the thread running the hook.
 * Services that return int give SKIPPER_POLICY_OK or SKIPPER_POLICY_ERROR
 * with the message already set (so a hook can return the code as is);
 * profile_get_mask also gives SKIPPER_POLICY_UNKNOWN_KEY for an absent key. */
struct skipper_host {
	uint32_t struct_size;      /* sizeof the host's table; check with SKIPPER_HOST_HAS */
	uint32_t abi_major, abi_minor;

	/* Model facts. n_layer == 0 means no model is bound: a configuration
	 * check creates the policy, pushes its section, calls config_complete
	 * and destroys it without any other hook. */
	int n_layer, n_embd, n_vocab, n_ctx;
	const char *model_name;    /* may be "" */

	/* Hex SHA-256 of the model file, computed on first use; NULL on failure. */
	const char *(*model_sha256)(void *ctx);

	void (*log)(void *ctx, int level, const char *fmt, ...)
#if defined(__GNUC__)
		__attribute__((format(printf, 3, 4)))
#endif
		;
	/* Record the message for the failing call; return a negative code after it. */
	void (*set_error)(void *ctx, const char *fmt, ...)
#if defined(__GNUC__)
		__attribute__((format(printf, 2, 3)))
#endif
		;

	/* Value parsers. 0 on success; on failure a negative code with the error
	 * already set ("expected an integer in [1, 64], got 'x'"). */
	int (*parse_bool)(void *ctx, const char *value, int *out);
	int (*parse_int)(void *ctx, const char *value, int64_t min, int64_t max, int64_t *out);
	int (*parse_double)(void *ctx, const char *value, double min, double max, double *out);
	/* Layer list "3,5,7-12" ("" and "none" = empty). With n_layer > 0 every
	 * layer must be < n_layer and mask (if non-NULL) gets [n_layer] 0/1
	 * entries; with n_layer == 0 only the syntax is checked (mask ignored). */
	int (*parse_layers)(void *ctx, const char *value, uint8_t *mask, int n_layer);
	/* Canonical text of a mask ("3,5,7-12", "" if empty) into buf; returns the
	 * length it needs (like snprintf). */
	int (*format_layers)(void *ctx, const uint8_t *mask, int n_layer, char *buf, size_t size);

	/* Seeded RNG: stream separates independent generators of one policy; the
	 * seed derives from [generate] seed, so runs are reproducible. */
	void (*rng_seed)(void *ctx, struct skipper_rng *rng, uint64_t stream);
	uint64_t (*rng_u64)(void *ctx, struct skipper_rng *rng);
	double (*rng_double)(void *ctx, struct skipper_rng *rng); /* [0, 1) */

	/* Monotonic clock, seconds. */
	double (*now)(void *ctx);

	/* Skip profiles (DESIGN §7; skipper-policy(3)). The [policy] profile
	 * setting, resolved to a local file, or NULL when not set. */
	const char *(*profile_path)(void *ctx);
	/* Read path; with a model bound it must match its SHA-256 and layer count. */
	int (*profile_read)(void *ctx, const char *path, struct skipper_profile **out);
	/* New profile for the bound model ([profile] model, model_sha256,
	 * n_layers, created_by filled in). */
	int (*profile_new)(void *ctx, const char *method, struct skipper_profile **out);
	/* Value of section.key or NULL. Owned by the profile. */
	const char *(*profile_get)(void *ctx, const struct skipper_profile *p, const char *section,
	                           const char *key);
	/* Layer list at section.key into mask[host->n_layer] (model required;
	 * the profile's layer count must match). SKIPPER_POLICY_UNKNOWN_KEY (no
	 * error set) when the key is absent. */
	int (*profile_get_mask)(void *ctx, const struct skipper_profile *p, const char *section,
	                        const char *key, uint8_t *mask);
	/* i-th section name (file order), NULL past the end. */
	const char *(*profile_section)(void *ctx, const struct skipper_profile *p, int i);
	int (*profile_set)(void *ctx, struct skipper_profile *p, const char *section, const char *key,
	                   const char *value);
	/* mask has host->n_layer entries (model required). */
	int (*profile_set_mask)(void *ctx, struct skipper_profile *p, const char *section,
	                        const char *key, const uint8_t *mask);
	/* Atomic write (temporary file + rename). */
	int (*profile_write)(void *ctx, const struct skipper_profile *p, const char *path);
	void (*profile_free)(void *ctx, struct skipper_profile *p);

	/* ---- compute services (model required) ---- */

	/* Teacher-forced draft pass: tokens[n] at positions start_pos.. with the
	 * given masks, attending to the committed prefix [0, start_pos) and to
	 * earlier rows; K/V go to scratch, nothing is committed. argmax_out[n]
	 * gets each row's argmax. start_pos <= committed length. Request hooks
	 * only (begin .. end). (swift) */
	int (*score_mask)(void *ctx, const uint8_t *skip_attn, const uint8_t *skip_mlp,
	                  const int32_t *tokens, int n, int start_pos, int32_t *argmax_out);

	/* One sub-layer (norm, op, residual add) of `layer` on caller states, in
	 * place: states[n_seq][seq_len][n_embd]. Each of the n_seq sequences is an
	 * independent chain at positions pos[seq_len] attending to the committed
	 * prefix [0, n_past) plus its own earlier rows; sequences never see each
	 * other; no K/V is written. Request hooks only. (clasp, knapspec) */
	int (*sublayer_forward)(void *ctx, int kind, int layer, int n_seq, int seq_len,
	                        float *states, const int32_t *pos, int n_past);

	/* Final norm + LM head argmax of states[n][n_embd] into ids[n]. */
	int (*head_argmax)(void *ctx, int n, const float *states, int32_t *ids);

	/* Mean wall time (s) of one sub-layer for one token over ctx_len cached
	 * positions, device-synchronised. (knapspec latency model) */
	int (*time_sublayer)(void *ctx, int kind, int layer, int ctx_len, double *seconds);

	/* Run SSD (or plain) decoding of some prompts with a fixed mask. Only
	 * from calibrate(). (bo-static, knn-router) */
	int (*trial)(void *ctx, const struct skipper_trial *t, struct skipper_trial_result *r);

	/* Prefill one user text (chat template applied) and write the mean over
	 * its positions of the post-final-norm hidden state to out[n_embd] (the
	 * same vector as request->prompt_mean). Only from calibrate(). */
	int (*embed_prompt)(void *ctx, const char *text, float *out);

	/* ---- float matrices beside a profile (knn-router anchors) ---- */

	/* Write n tensors to a safetensors file (F32, [rows, cols]), atomically. */
	int (*tensor_write)(void *ctx, const char *path, const struct skipper_tensor *t, int n);
	/* Tensor `name` of a safetensors file: *rows and *cols always set; the
	 * data is copied to out when non-NULL (capacity >= rows * cols floats).
	 * Absent tensor: SKIPPER_POLICY_UNKNOWN_KEY with no error set. */
	int (*tensor_read)(void *ctx, const char *path, const char *name, float *out, size_t capacity, int *rows,
	                   int *cols);

	/* ---- minor 1 (check with SKIPPER_HOST_HAS) ---- */

	/* The measured costs of this model on this machine (model required;
	 * measured on first use, then cached by the host). NULL with the error
	 * set when they cannot be had. Valid until destroy. */
	const struct skipper_costs *(*costs)(void *ctx);
};

/* Non-zero if the host table has member m (tables only grow). */
#define SKIPPER_HOST_HAS(host, m) \
	((host)->struct_size >= offsetof(struct skipper_host, m) + sizeof((host)->m))

/* ---- what the host may do with several instances at once (descriptor.thread_model) ----
 * The host never calls one instance from two threads at once. */

/* Instances are independent: the host may call hooks of different
 * instances at the same time, from different threads. The default: right
 * for every plugin that keeps its state in its instances (no globals). */
#define SKIPPER_THREAD_MODEL_PARALLEL_INSTANCES 0
/* Every call into the plugin (create, config, config_complete,
 * refine_needs, the hooks, destroy), for all its instances, one at a time.
 * For a plugin with state shared between instances. A plugin built for
 * minor 0 or 1 (before this field) is run so. */
#define SKIPPER_THREAD_MODEL_SERIALIZE_ALL 1

/* ---- the descriptor ----
 * Call order (skipper-policies(7)):
 *   create, config (once per key of the policy's INI section, file order),
 *   config_complete, refine_needs,
 *   per request: begin, { select_draft, should_exit (per draft step),
 *                         verify, on_accept } ..., end,
 *   or calibrate instead of requests; destroy.
 * Every hook may be NULL (core default in parentheses). Hooks return
 * SKIPPER_POLICY_OK or a negative code (with set_error) that aborts the
 * request. */
struct skipper_policy {
	uint32_t abi_major;        /* filled by SKIPPER_POLICY_REGISTER (SKIPPER_POLICY_ABI_MAJOR) */
	uint32_t abi_minor;        /* filled by SKIPPER_POLICY_REGISTER (SKIPPER_POLICY_ABI_MINOR) */
	uint32_t struct_size;      /* filled by SKIPPER_POLICY_REGISTER (sizeof(struct skipper_policy)) */
	const char *name;          /* required; equals NAME in skipper-policy-NAME.so */
	const char *version;       /* "1.2.0" */
	const char *description;   /* one line */
	const char *config_help;   /* "key = value  meaning\n" lines for skipper policies */
	uint64_t needs;            /* SKIPPER_NEED_* */
	int top_k;                 /* with SKIPPER_NEED_TOPK (0 = 10) */
	int prompt_rows;           /* rows captured at begin (0 = 1) */

	/* Required. *state is the plugin's, freed by destroy. host and ctx stay
	 * valid until destroy returns. A failing create frees what it made:
	 * destroy is not called then. */
	int (*create)(const struct skipper_host *host, void *ctx, void **state);
	/* One key of the policy's section (NULL: any key is unknown). Return
	 * SKIPPER_POLICY_UNKNOWN_KEY for keys it does not know. */
	int (*config)(void *state, const char *key, const char *value);
	/* All keys pushed: check consistency, allocate (NULL: nothing to do). */
	int (*config_complete)(void *state);
	/* Adjust needs after configuration (NULL: the descriptor's values).
	 * Called once, before the first begin; needs is prefilled. */
	int (*refine_needs)(void *state, struct skipper_needs *needs);
	/* Required. */
	void (*destroy)(void *state);

	int (*begin)(void *state, const struct skipper_request *req);           /* (nothing) */
	int (*select_draft)(void *state, struct skipper_plan *plan);             /* (max_draft = 0: no drafting) */
	int (*should_exit)(void *state, const struct skipper_step *step);       /* (continue to max_draft) */
	int (*verify)(void *state, const struct skipper_draft *draft, struct skipper_tree *tree); /* (chain) */
	int (*on_accept)(void *state, const struct skipper_verdict *verdict);   /* (nothing) */
	int (*end)(void *state, const struct skipper_stats *stats);             /* (nothing) */
	int (*calibrate)(void *state, const struct skipper_calibrate *calib);   /* (unsupported) */

	/* ---- minor 2 ---- */
	int thread_model;          /* SKIPPER_THREAD_MODEL_* (0 = parallel instances) */
};

typedef const struct skipper_policy *(*skipper_policy_init_fn)(void);

#if defined(__GNUC__)
#define SKIPPER_POLICY_EXPORT __attribute__((visibility("default")))
#else
#define SKIPPER_POLICY_EXPORT
#endif

#ifdef __cplusplus
#define SKIPPER_POLICY_EXTERN_C extern "C"
#else
#define SKIPPER_POLICY_EXTERN_C
#endif

/* Fill in the ABI fields of a descriptor that leaves abi_major 0 (a plugin
 * that sets them by hand keeps its values). */
static inline void skipper_policy_fill_abi(struct skipper_policy *d)
{
	if (d->abi_major == 0) {
		d->abi_major = SKIPPER_POLICY_ABI_MAJOR;
		d->abi_minor = SKIPPER_POLICY_ABI_MINOR;
		d->struct_size = (uint32_t)sizeof *d;
	}
}

/* Emit the plugin's single exported entry point. It returns a copy of desc
 * (which may be const) with the ABI fields filled in. The host calls it once
 * per load, never from two threads at once.
 *
 * SKIPPER_POLICY_REGISTER_WITH(desc, finish) also calls
 * void finish(struct skipper_policy *d) on the copy before the host sees it:
 * for a plugin that completes its descriptor when loaded (its config_help
 * made from a table of its keys, say). */
#define SKIPPER_POLICY_REGISTER_WITH(desc, finish)                                        \
	SKIPPER_POLICY_EXTERN_C SKIPPER_POLICY_EXPORT const struct skipper_policy *       \
	skipper_policy_init(void);                                                        \
	SKIPPER_POLICY_EXTERN_C SKIPPER_POLICY_EXPORT const struct skipper_policy *       \
	skipper_policy_init(void)                                                         \
	{                                                                                 \
		static struct skipper_policy skipper_policy_desc_;                        \
		skipper_policy_desc_ = (desc);                                            \
		skipper_policy_fill_abi(&skipper_policy_desc_);                           \
		finish(&skipper_policy_desc_);                                            \
		return &skipper_policy_desc_;                                             \
	}
#define SKIPPER_POLICY_REGISTER(desc) SKIPPER_POLICY_REGISTER_WITH(desc, (void))

#ifdef __cplusplus
}
#endif
#endif
