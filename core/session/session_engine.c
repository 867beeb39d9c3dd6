/* An engine as a configuration says: its policy (loaded, made with the
 * engine), context lookup, the guard, the draft head, the corpus n-grams
 * and the cost curve's cache. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "policy/policy_host.h"
#include "session.h"

static void lookup_opts(const struct skipper_config *cfg, const char *policy, struct skipper_lookup_opts *lk)
{
	long v;
	int on = 0;
	skipper_config_get_bool(cfg, "policy", "lookup", &on, NULL);
	lk->enable = on || strcmp(policy, "lookup") == 0;
	lk->min_ngram = skipper_config_get_int(cfg, "lookup", "min_ngram", &v, NULL) ? 1 : (int)v;
	lk->max_ngram = skipper_config_get_int(cfg, "lookup", "max_ngram", &v, NULL) ? 4 : (int)v;
	lk->max_draft = skipper_config_get_int(cfg, "lookup", "max_draft", &v, NULL) ? 16 : (int)v;
	lk->branches = skipper_config_get_int(cfg, "lookup", "branches", &v, NULL) ? 8 : (int)v;
}

/* What the engine says is worth a person's attention (the first
 * measurement of a cost curve takes up to a minute). */
static void engine_note(void *ctx, const char *msg)
{
	session_log(ctx, SKIPPER_LOG_WARN, "%s", msg);
}

/* The [policy] profile setting as a local file: a hub: one is pulled (and
 * its signature checked); *owned is what to free. */
static int profile_path(struct skipper_session *s, const struct skipper_config *cfg, const char **path, char **owned,
                        struct skipper_error *err)
{
	const char *prof = skipper_config_get(cfg, "policy", "profile");
	*owned = NULL;
	*path = prof && *prof ? prof : NULL;
	if (!*path || strncmp(prof, "hub:", 4) != 0)
		return SKIPPER_OK;
	int rc = session_hub_profile(cfg, prof, &s->hooks, owned, err);
	if (rc)
		return skipper_fail_prefix(err, "[policy] profile = %s", prof);
	*path = *owned;
	return SKIPPER_OK;
}

int skipper_session_engine(struct skipper_session *s, const struct skipper_config *cfg, struct skipper_engine **out,
                           struct skipper_error *err)
{
	return skipper_session_engine_seq(s, cfg, 0, out, err);
}

int skipper_session_sequences(struct skipper_session *s, int n, struct skipper_error *err)
{
	if (n == 1)
		return SKIPPER_OK;
	if (!s->be->ops->set_sequences)
		return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED, "the %s backend decodes one sequence at a time",
		                    s->be->ops->name);
	return skipper_backend_set_sequences(s->be, n, err);
}

int skipper_session_engine_seq(struct skipper_session *s, const struct skipper_config *cfg, int seq,
                               struct skipper_engine **out, struct skipper_error *err)
{
	const char *name = skipper_config_get(cfg, "policy", "name");
	struct skipper_engine_opts o = { .note = engine_note, .note_ctx = s, .seq = seq, .history = s->history };
	struct skipper_policy_env env = { .n_layer = s->model->view.hp.n_layer, .n_embd = s->model->view.hp.n_embd,
		                          .n_vocab = s->model->view.hp.n_vocab, .n_ctx = s->be->n_ctx,
		                          .model_name = s->model->view.name };
	struct skipper_ngram_set ngrams = { 0 };
	struct skipper_policy_search search;
	const struct skipper_costs *costs;
	char *cache = NULL, *owned_profile = NULL;
	int32_t *vocab = NULL;
	int n_vocab = 0, guard = 1, rc;
	long seed = 0;

	*out = NULL;
	lookup_opts(cfg, name, &o.lookup);
	skipper_config_get_bool(cfg, "policy", "guard", &guard, NULL);
	o.no_guard = !guard;
	skipper_config_get_bool(cfg, "generate", "prefix_cache", &o.prefix_cache, NULL);
	/* the ranking only matters to policies that draft with the model */
	int drafts = strcmp(name, "none") != 0 && strcmp(name, "lookup") != 0;
	if ((rc = session_draft_vocab(s, cfg, drafts, &vocab, &n_vocab, err)) ||
	    (o.lookup.enable && (rc = session_ngrams(s, cfg, &ngrams, err))))
		goto out;
	o.draft_vocab = vocab;
	o.n_draft_vocab = n_vocab;
	o.ngrams = &ngrams;
	o.cost_cache = cache = session_cost_cache(s, n_vocab < s->model->view.hp.n_vocab ? n_vocab : 0);
	if (strcmp(name, "none") != 0) {
		if ((rc = profile_path(s, cfg, &env.profile_path, &owned_profile, err)))
			goto out;
		skipper_config_get_int(cfg, "generate", "seed", &seed, NULL);
		env.seed = (uint64_t)seed;
		session_bind_services(s, &env);
		session_policy_search(cfg, &search);
		if ((rc = skipper_policy_load(name, &search, &o.lib, err)))
			goto out;
		o.env = &env;
		o.cfg = cfg;
	}
	if ((rc = skipper_engine_new(s->be, s->tok, &o, out, err)))
		goto out;
	/* the path must outlive the instance, which the session does */
	if (owned_profile && (rc = session_keep(s, owned_profile, err))) {
		skipper_engine_free(*out);
		*out = NULL;
		goto out;
	}
	owned_profile = NULL;
	/* plain decoding needs no costs; everything that drafts sizes its
	 * drafts and guards itself with them, measured now rather than
	 * inside the first request */
	if ((o.lookup.enable || strcmp(name, "none") != 0) && (rc = skipper_engine_costs(*out, &costs, err))) {
		skipper_engine_free(*out);
		*out = NULL;
		goto out;
	}
	if (cfg == s->cfg && !s->draft_ids) {
		s->draft_ids = vocab;
		s->n_draft_ids = n_vocab;
		vocab = NULL;
	}
out:
	free(owned_profile);
	free(vocab);
	free(cache);
	session_ngrams_free(&ngrams);
	return rc;
}
