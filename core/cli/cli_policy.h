/* The CLI's side of policies: finding them, binding an instance to the
 * session's model and engine, and the session-level services (trial,
 * embed_prompt) that need the chat template and tokenizer. */
#ifndef SKIPPER_CLI_POLICY_H
#define SKIPPER_CLI_POLICY_H

#include "policy/policy_host.h"

struct cli_session;
struct cli_policy;

/* For skipper_config_validate: is SECTION an installed policy? arg = the
 * configuration being validated (its [policy] plugin_dir is searched). */
int cli_policy_section_ok(const char *section, void *cfg);

/* The search path of a configuration (built-ins + [policy] plugin_dir). */
void cli_policy_search(const struct skipper_config *cfg, struct skipper_policy_search *search);

/* Load NAME, create an instance configured from cfg's [NAME] section (and
 * [policy] profile / plugin_dir), bound to the session's model.
 * *out owned: cli_policy_close(). */
int cli_policy_open(struct cli_session *s, const struct skipper_config *cfg, const char *name,
                    struct cli_policy **out, struct skipper_error *err);
struct skipper_policy_instance *cli_policy_instance(struct cli_policy *p);
/* Compute services run on this engine from now on. */
void cli_policy_bind_engine(struct cli_policy *p, struct skipper_engine *e);
void cli_policy_close(struct cli_policy *p);
/* Show the policy's INFO lines from now on: its end() hook logs its
 * per-request statistics (search / DP time) there. */
void cli_policy_show_info(struct cli_policy *p);

/* Session-level services (trial.c); ctx is the policy context. */
int cli_trial(void *ctx, const struct skipper_trial *t, struct skipper_trial_result *r, struct skipper_error *err);
int cli_embed_prompt(void *ctx, const char *text, float *out, struct skipper_error *err);

#endif
