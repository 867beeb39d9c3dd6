/* The tokenizer and chat template of a loaded model, wherever its format
 * keeps them: GGUF metadata, or the JSON files beside a Hugging Face
 * checkpoint's weights. */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/file.h"
#include "model/model.h"
#include "tokenizer.h"

int skipper_tokenizer_for_model(const struct skipper_model *m, struct skipper_tokenizer **out,
                                struct skipper_error *err)
{
	if (m->gguf)
		return skipper_tokenizer_from_gguf(m->gguf, out, err);
	char *tj = skipper_model_hf_file(m, "tokenizer.json"), *tc = skipper_model_hf_file(m, "tokenizer_config.json");
	int32_t eos[16];
	int rc;

	*out = NULL;
	if (!tj)
		rc = skipper_fail(err, SKIPPER_ERR_NOT_FOUND, "%s: no tokenizer.json beside the weights",
		                  skipper_model_path(m));
	else
		rc = skipper_tokenizer_from_hf_vocab(tj, tc, m->view.hp.n_vocab, out, err);
	for (int i = 0, n = rc ? 0 : skipper_model_hf_eos(m, eos, 16); i < n && !rc; i++)
		rc = skipper_tokenizer_add_eog(*out, eos[i]);
	if (rc == SKIPPER_OK && skipper_tokenizer_n_vocab(*out) > m->view.hp.n_vocab)
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "%s: %d tokens, but config.json's vocab_size is %d", tj,
		                  skipper_tokenizer_n_vocab(*out), m->view.hp.n_vocab);
	if (rc) {
		skipper_tokenizer_free(*out);
		*out = NULL;
	}
	free(tj);
	free(tc);
	return rc;
}

char *skipper_model_chat_template(const struct skipper_model *m)
{
	if (m->gguf) {
		struct skipper_gguf_str j = { 0 };
		if (skipper_gguf_get_str(m->gguf, "tokenizer.chat_template", &j) || !j.ptr)
			return NULL;
		return strndup(j.ptr, (size_t)j.len);
	}
	char *tc = skipper_model_hf_file(m, "tokenizer_config.json"), *t = tc ? skipper_hf_chat_template(tc) : NULL;
	free(tc);
	if (t)
		return t;
	/* transformers 4.43 and later may keep it in a file of its own */
	char *path = skipper_model_hf_file(m, "chat_template.jinja");
	const void *data;
	size_t len;
	struct skipper_error err = { 0 };
	if (path && skipper_map_file(path, 1 << 20, "chat template", &data, &len, &err) == SKIPPER_OK) {
		t = strndup(data, len);
		skipper_unmap_file(data, len);
	}
	free(path);
	return t;
}
