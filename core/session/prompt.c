/* Prompts as token ids: a conversation through the model's chat template,
 * or raw text. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "session.h"

static int tokenize(struct skipper_session *s, const char *text, int special, int32_t **ids, size_t *n,
                    struct skipper_error *err)
{
	return skipper_tokenize(s->tok, text, strlen(text), skipper_tokenizer_add_bos(s->tok), special, ids, n, err);
}

int skipper_session_chat_text(struct skipper_session *s, const struct skipper_message *msgs, size_t n_msgs,
                              char **text, struct skipper_error *err)
{
	struct skipper_chat_turn *t = calloc(n_msgs + 1, sizeof *t);
	size_t k = 0;
	int rc;

	*text = NULL;
	if (!t)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	/* the configured system prompt where the conversation has none */
	if (s->system && !(n_msgs && msgs[0].role && !strcmp(msgs[0].role, "system")))
		t[k++] = (struct skipper_chat_turn){ "system", s->system };
	for (size_t i = 0; i < n_msgs; i++)
		t[k++] = (struct skipper_chat_turn){ msgs[i].role, msgs[i].content };
	rc = skipper_chat_format_turns(s->chat_template, t, k, text, err);
	free(t);
	return rc;
}

int skipper_session_chat_tokens(struct skipper_session *s, const struct skipper_message *msgs, size_t n_msgs,
                                int32_t **ids, size_t *n_ids, struct skipper_error *err)
{
	char *text = NULL;
	int rc = skipper_session_chat_text(s, msgs, n_msgs, &text, err);

	*ids = NULL;
	*n_ids = 0;
	if (!rc)
		rc = tokenize(s, text, s->chat_template != SKIPPER_CHAT_NONE, ids, n_ids, err);
	free(text);
	return rc;
}

int skipper_session_text_tokens(struct skipper_session *s, const char *text, int32_t **ids, size_t *n_ids,
                                struct skipper_error *err)
{
	return tokenize(s, text, 0, ids, n_ids, err);
}

int skipper_session_prompt_tokens(struct skipper_session *s, const char *user, int32_t **ids, size_t *n,
                                  struct skipper_error *err)
{
	struct skipper_message m = { "user", user };
	return skipper_session_chat_tokens(s, &m, 1, ids, n, err);
}
