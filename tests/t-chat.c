/* Chat templates: exact formatted prompts, detection from real template
 * strings, and the default system prompt embedded in SmolLM2's template. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "tap.h"
#include "tokenizer.h"

/* Template strings as the models ship them (tokenizer_config.json), in the
 * form GGUF stores them: JSON escapes decoded, Jinja escapes kept. */
static const char smollm2_tmpl[] =
	"{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
	"{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
	"{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
	"{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

static const char llama2_tmpl[] =
	"{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = "
	"messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}"
	"{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
	"{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
	"{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
	"'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}"
	"{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}"
	"{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

static const char llama3_tmpl[] =
	"{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' "
	"+ message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
	"{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}"
	"{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

static const char mistral_tmpl[] =
	"{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
	"{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
	"{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}"
	"{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% else %}"
	"{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}{% endfor %}";

static const char zephyr_tmpl[] =
	"{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + "
	"eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n"
	"{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n"
	"{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}";

/* Qwen2.5: the turn built from a variable comes first, the literal default
 * (with a Jinja "\n" escape) later. */
static const char qwen_tmpl[] =
	"{%- if messages[0]['role'] == 'system' %}\n        {{- '<|im_start|>system\\n' + messages[0]['content'] + "
	"'<|im_end|>\\n' }}\n    {%- else %}\n        {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. "
	"You are a helpful assistant.<|im_end|>\\n' }}\n    {%- endif %}";

static const char phi3_tmpl[] =
	"{% for message in messages %}{% if message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + "
	"'<|end|>\n' + '<|assistant|>\n'}}{% endif %}{% endfor %}";

static void golden(int tmpl, const char *sys, const char *user, const char *want, const char *what)
{
	char *out = NULL;
	struct skipper_error err = { 0 };
	int rc = skipper_chat_format(tmpl, sys, user, &out, &err);
	if (rc)
		diag("%s", err.msg);
	is_str(out, want, "%s", what);
	free(out);
}

static int detect(const char *s) { return skipper_chat_template_detect(s, strlen(s)); }

int main(void)
{
	/* names */
	static const char *const names[] = { "none", "chatml", "llama2", "llama3", "mistral", "zephyr" };
	for (int i = 0; i < 6; i++) {
		is_int(skipper_chat_template_by_name(names[i]), i, "by name %s", names[i]);
		is_str(skipper_chat_template_name(i), names[i], "name of %d", i);
	}
	is_int(skipper_chat_template_by_name("vicuna"), -1, "unknown name");

	/* golden outputs */
	golden(SKIPPER_CHAT_CHATML, "You are a helpful AI assistant named SmolLM, trained by Hugging Face", "Hi!",
	       "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
	       "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n", "chatml with system");
	golden(SKIPPER_CHAT_CHATML, NULL, "Hi!", "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n",
	       "chatml without system");
	golden(SKIPPER_CHAT_LLAMA2, "Be brief.", "What is 2+2?",
	       "[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nWhat is 2+2? [/INST]", "llama2 with system");
	golden(SKIPPER_CHAT_LLAMA2, NULL, "What is 2+2?", "[INST] What is 2+2? [/INST]", "llama2 without system");
	golden(SKIPPER_CHAT_LLAMA3, " Be brief.\n", "What is 2+2?",
	       "<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
	       "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
	       "<|start_header_id|>assistant<|end_header_id|>\n\n", "llama3 with system (trimmed)");
	golden(SKIPPER_CHAT_LLAMA3, NULL, "Hi",
	       "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
	       "<|start_header_id|>assistant<|end_header_id|>\n\n", "llama3 without system");
	golden(SKIPPER_CHAT_MISTRAL, NULL, "Hi", "[INST] Hi [/INST]", "mistral");
	golden(SKIPPER_CHAT_MISTRAL, "Be brief.", "Hi", "[INST] Be brief.\n\nHi [/INST]", "mistral with system");
	golden(SKIPPER_CHAT_ZEPHYR, "Be brief.", "Hi", "<|system|>\nBe brief.</s>\n<|user|>\nHi</s>\n<|assistant|>\n",
	       "zephyr with system");
	golden(SKIPPER_CHAT_ZEPHYR, NULL, "Hi", "<|user|>\nHi</s>\n<|assistant|>\n", "zephyr without system");
	golden(SKIPPER_CHAT_NONE, NULL, "raw prompt", "raw prompt", "none: prompt as is");
	golden(SKIPPER_CHAT_NONE, "sys", "raw", "sys\n\nraw", "none with system");
	{
		char *out = (char *)1;
		struct skipper_error err = { 0 };
		ok(skipper_chat_format(99, NULL, "x", &out, &err) == SKIPPER_ERR_ARG && out == NULL, "bad template id");
		ok(skipper_chat_format(SKIPPER_CHAT_CHATML, NULL, NULL, &out, &err) == SKIPPER_ERR_ARG, "NULL user");
	}

	/* detection */
	is_int(detect(smollm2_tmpl), SKIPPER_CHAT_CHATML, "detect SmolLM2 -> chatml");
	is_int(detect(qwen_tmpl), SKIPPER_CHAT_CHATML, "detect Qwen2.5 -> chatml");
	is_int(detect(llama2_tmpl), SKIPPER_CHAT_LLAMA2, "detect Llama-2 -> llama2");
	is_int(detect(llama3_tmpl), SKIPPER_CHAT_LLAMA3, "detect Llama-3 -> llama3");
	is_int(detect(mistral_tmpl), SKIPPER_CHAT_MISTRAL, "detect Mistral -> mistral");
	is_int(detect(zephyr_tmpl), SKIPPER_CHAT_ZEPHYR, "detect Zephyr -> zephyr");
	is_int(detect(phi3_tmpl), SKIPPER_CHAT_NONE, "Phi-3 is not taken for zephyr");
	is_int(detect("{{ messages }}"), SKIPPER_CHAT_NONE, "unknown template -> none");
	is_int(skipper_chat_template_detect(NULL, 0), SKIPPER_CHAT_NONE, "no template -> none");
	/* length-bounded: the marker beyond len is not seen */
	is_int(skipper_chat_template_detect(smollm2_tmpl, 20), SKIPPER_CHAT_NONE, "detection respects len");

	/* default system prompts */
	char *s = skipper_chat_default_system(smollm2_tmpl, strlen(smollm2_tmpl));
	is_str(s, "You are a helpful AI assistant named SmolLM, trained by Hugging Face", "SmolLM2 default system");
	free(s);
	s = skipper_chat_default_system(qwen_tmpl, strlen(qwen_tmpl));
	is_str(s, "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.",
	       "Qwen2.5 default system (variable turn skipped, \\n escape)");
	free(s);
	ok(skipper_chat_default_system(llama3_tmpl, strlen(llama3_tmpl)) == NULL, "Llama-3: no default system");
	ok(skipper_chat_default_system(llama2_tmpl, strlen(llama2_tmpl)) == NULL, "Llama-2: no default system");

	/* the real template from the SmolLM2 GGUF */
	char buf[4096];
	const char *model = getenv("SKIPPER_TEST_MODEL");
	if (!model || !*model) {
		const char *cache = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
		if (cache && *cache)
			snprintf(buf, sizeof buf, "%s/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf", cache);
		else
			snprintf(buf, sizeof buf, "%s/.cache/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf", home ? home : "");
		model = buf;
	}
	struct skipper_gguf *g = NULL;
	struct skipper_error err = { 0 };
	FILE *f = fopen(model, "rb");
	if (f && (fclose(f), skipper_gguf_open(model, &g, &err) == 0)) {
		struct skipper_gguf_str t;
		int rc = skipper_gguf_get_str(g, "tokenizer.chat_template", &t);
		ok(rc == 0, "SmolLM2 GGUF has tokenizer.chat_template");
		if (rc == 0) {
			is_int(skipper_chat_template_detect(t.ptr, t.len), SKIPPER_CHAT_CHATML, "GGUF template -> chatml");
			s = skipper_chat_default_system(t.ptr, t.len);
			is_str(s, "You are a helpful AI assistant named SmolLM, trained by Hugging Face",
			       "GGUF template default system");
			free(s);
			ok(t.len == strlen(smollm2_tmpl) && memcmp(t.ptr, smollm2_tmpl, t.len) == 0,
			   "embedded copy matches the GGUF's template");
		} else {
			tap_skip(3, "no template");
		}
		skipper_gguf_close(g);
	} else {
		tap_skip(4, "SmolLM2 GGUF not found (set SKIPPER_TEST_MODEL)");
	}
	return tap_done();
}
