/* Chat templates: exact formatted prompts, detection from real template
 * strings, and the default system prompt embedded in SmolLM2's template. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gguf.h"
#include "tap.h"
#include "tokenizer/tokenizer.h"

/* Template strings as the models ship them (tokenizer_config.json), in the
 * form GGUF stores them: JSON escapes decoded, Jinja escapes kept. They live
 * in tests/data/chat/ so that tests/ref/chat-ref.py can render them. */
static char *smollm2_tmpl, *llama2_tmpl, *llama3_tmpl, *mistral_tmpl, *zephyr_tmpl, *qwen_tmpl, *phi3_tmpl;

static const char *srcdir(void)
{
	const char *s = getenv("top_srcdir");
	return s && *s ? s : ".";
}

static char *slurp(const char *rel, size_t *len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", srcdir(), rel);
	FILE *f = fopen(path, "rb");
	if (!f) {
		printf("Bail out! cannot open %s\n", path);
		exit(1);
	}
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	for (size_t k; buf && (k = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
		n += k;
		if (n + 1 == cap)
			buf = realloc(buf, cap *= 2);
	}
	fclose(f);
	if (!buf)
		exit(1);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static char *tmpl_file(const char *name)
{
	char rel[256];
	snprintf(rel, sizeof rel, "tests/data/chat/%s.jinja", name);
	return slurp(rel, NULL);
}

static int hexval(int c) { return c <= '9' ? c - '0' : (c | 32) - 'a' + 10; }

static char *unhex(const char *h, size_t n)
{
	char *s = malloc(n / 2 + 1);
	for (size_t i = 0; i + 1 < n; i += 2)
		s[i / 2] = (char)(hexval(h[i]) * 16 + hexval(h[i + 1]));
	s[n / 2] = 0;
	return s;
}

/* tests/data/chat-ref.tsv: each template rendered by Jinja2 (as Hugging
 * Face does) must equal skipper's format for the detected template, with
 * the template's own default system prompt when the conversation has none. */
static void rendered_tests(void)
{
	char *all = slurp("tests/data/chat-ref.tsv", NULL), *save = NULL;
	int n = 0;
	for (char *line = strtok_r(all, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		char *f[4];
		f[0] = line;
		for (int i = 1; i < 4; i++) {
			f[i] = strchr(f[i - 1], '\t');
			if (!f[i])
				break;
			*f[i]++ = 0;
		}
		char *jinja = tmpl_file(f[0]);
		char *sys = strcmp(f[1], "-") ? unhex(f[1], strlen(f[1])) : NULL;
		char *user = unhex(f[2], strlen(f[2])), *want = unhex(f[3], strlen(f[3]));
		int tmpl = skipper_chat_template_detect(jinja, strlen(jinja));
		char *def = sys ? NULL : skipper_chat_default_system(jinja, strlen(jinja));
		char *got = NULL;
		struct skipper_error err = { 0 };
		skipper_chat_format(tmpl, sys ? sys : def, user, &got, &err);
		is_str(got, want, "%s (%s system): equals the Jinja2 rendering", f[0], sys ? "with" : "no");
		n++;
		free(got);
		free(def);
		free(sys);
		free(user);
		free(want);
		free(jinja);
	}
	ok(n >= 12, "%d rendered conversations compared", n);
	free(all);
}

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
	smollm2_tmpl = tmpl_file("smollm2");
	llama2_tmpl = tmpl_file("llama2");
	llama3_tmpl = tmpl_file("llama3");
	mistral_tmpl = tmpl_file("mistral");
	zephyr_tmpl = tmpl_file("zephyr");
	qwen_tmpl = tmpl_file("qwen2.5-fragment");
	phi3_tmpl = tmpl_file("phi3-fragment");

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
	golden(SKIPPER_CHAT_LLAMA2, NULL, " What is 2+2?\n", "[INST] What is 2+2? [/INST]", "llama2 without system (trimmed)");
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

	rendered_tests();

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
	free(smollm2_tmpl);
	free(llama2_tmpl);
	free(llama3_tmpl);
	free(mistral_tmpl);
	free(zephyr_tmpl);
	free(qwen_tmpl);
	free(phi3_tmpl);
	return tap_done();
}
