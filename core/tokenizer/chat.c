/* Chat templates without a Jinja engine: a few fixed formats, recognised
 * from characteristic substrings of the model's tokenizer.chat_template.
 *
 * Formatted prompts never contain BOS: the tokenizer adds it when the model
 * asks for it (add_bos), exactly once. Formats follow the models' own
 * templates (and llama.cpp where they disagree on detail):
 *   chatml   <|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n
 *   llama2   [INST] <<SYS>>\nS\n<</SYS>>\n\nU [/INST]                      (contents trimmed)
 *   llama3   <|start_header_id|>system<|end_header_id|>\n\nS<|eot_id|>... (contents trimmed)
 *   mistral  [INST] S\n\nU [/INST]   (Mistral has no system role: it is
 *            put before the user text, as Mistral's later templates do)
 *   zephyr   <|system|>\nS</s>\n<|user|>\nU</s>\n<|assistant|>\n
 *   none     the user text as is (system, when given, first, then a blank line)
 * A NULL system prompt leaves the system turn out; "" keeps an empty one. */
#define _GNU_SOURCE /* memmem */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "tokenizer.h"

static const struct { const char *name; int tmpl; } names[] = {
	{ "none", SKIPPER_CHAT_NONE }, { "chatml", SKIPPER_CHAT_CHATML }, { "llama2", SKIPPER_CHAT_LLAMA2 },
	{ "llama3", SKIPPER_CHAT_LLAMA3 }, { "mistral", SKIPPER_CHAT_MISTRAL }, { "zephyr", SKIPPER_CHAT_ZEPHYR },
	/* aliases */
	{ "raw", SKIPPER_CHAT_NONE }, { "llama-2", SKIPPER_CHAT_LLAMA2 }, { "llama-3", SKIPPER_CHAT_LLAMA3 },
	{ "smollm", SKIPPER_CHAT_CHATML }, { "qwen", SKIPPER_CHAT_CHATML },
};

int skipper_chat_template_by_name(const char *name)
{
	if (!name)
		return -1;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(name, names[i].name) == 0)
			return names[i].tmpl;
	return -1;
}

const char *skipper_chat_template_name(int tmpl)
{
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		if (names[i].tmpl == tmpl)
			return names[i].name;
	return NULL;
}

static int has(const char *s, size_t len, const char *needle)
{
	return s && memmem(s, len, needle, strlen(needle)) != NULL;
}

int skipper_chat_template_detect(const char *j, size_t len)
{
	if (has(j, len, "<|im_start|>"))
		return SKIPPER_CHAT_CHATML;
	if (has(j, len, "<|start_header_id|>") && has(j, len, "<|end_header_id|>"))
		return SKIPPER_CHAT_LLAMA3;
	if (has(j, len, "[INST]"))
		/* Llama-2 chat templates carry the <<SYS>> block; Mistral's do not */
		return has(j, len, "<<SYS>>") ? SKIPPER_CHAT_LLAMA2 : SKIPPER_CHAT_MISTRAL;
	if (has(j, len, "<|user|>") && has(j, len, "<|assistant|>") && !has(j, len, "<|end|>"))
		return SKIPPER_CHAT_ZEPHYR; /* <|end|> would be Phi-3, which is not supported */
	return SKIPPER_CHAT_NONE;
}

struct sbuf { char *p; size_t n, cap; int oom; };

static void put(struct sbuf *b, const char *s, size_t len)
{
	if (b->oom)
		return;
	if (b->n + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->n + len + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, len);
	b->n += len;
	b->p[b->n] = 0;
}

static void puts_(struct sbuf *b, const char *s) { put(b, s, strlen(s)); }

/* Llama-2 and Llama-3 templates trim message contents (strip(), |trim). */
static void put_trimmed(struct sbuf *b, const char *s)
{
	size_t len = strlen(s);
	while (len && strchr(" \t\n\r\f\v", s[0])) {
		s++;
		len--;
	}
	while (len && strchr(" \t\n\r\f\v", s[len - 1]))
		len--;
	put(b, s, len);
}

/* Is turn i a system turn that templates without one fold into the first
 * user turn? Only the first turn may be one. */
static int is_system(const struct skipper_chat_turn *t, size_t i) { return i == 0 && !strcmp(t[0].role, "system"); }

/* Llama-2 and Mistral templates alternate user and assistant turns after
 * an optional system turn, starting with the user. */
static int alternates(const struct skipper_chat_turn *t, size_t n)
{
	size_t first = n && is_system(t, 0);
	for (size_t i = first; i < n; i++)
		if (strcmp(t[i].role, (i - first) % 2 ? "assistant" : "user"))
			return 0;
	return n > first;
}

static void put_turn(struct sbuf *b, int tmpl, const char *role, const char *content, int trimmed)
{
	switch (tmpl) {
	case SKIPPER_CHAT_CHATML:
		puts_(b, "<|im_start|>");
		puts_(b, role);
		puts_(b, "\n");
		puts_(b, content);
		puts_(b, "<|im_end|>\n");
		break;
	case SKIPPER_CHAT_LLAMA3:
		puts_(b, "<|start_header_id|>");
		puts_(b, role);
		puts_(b, "<|end_header_id|>\n\n");
		if (trimmed)
			put_trimmed(b, content);
		else
			puts_(b, content);
		puts_(b, "<|eot_id|>");
		break;
	case SKIPPER_CHAT_ZEPHYR:
		puts_(b, "<|");
		puts_(b, role);
		puts_(b, "|>\n");
		puts_(b, content);
		puts_(b, "</s>\n");
		break;
	}
}

/* [INST] turns: Llama-2 (system in a <<SYS>> block, contents trimmed, a
 * BOS before every user turn but the first, which the tokenizer adds) or
 * Mistral (system before the first user text). */
static void put_inst(struct sbuf *b, int tmpl, const struct skipper_chat_turn *t, size_t n)
{
	const char *sys = n && is_system(t, 0) ? t[0].content : NULL;
	int llama2 = tmpl == SKIPPER_CHAT_LLAMA2;
	for (size_t i = sys ? 1 : 0, k = 0; i < n; i++, k++) {
		if (k % 2) { /* assistant */
			puts_(b, llama2 ? " " : "");
			if (llama2)
				put_trimmed(b, t[i].content);
			else
				puts_(b, t[i].content);
			puts_(b, llama2 ? " </s>" : "</s>");
			continue;
		}
		puts_(b, k && llama2 ? "<s>[INST] " : "[INST] ");
		if (sys && k == 0) {
			if (llama2) {
				puts_(b, "<<SYS>>\n");
				put_trimmed(b, sys);
				puts_(b, "\n<</SYS>>\n\n");
			} else {
				puts_(b, sys);
				puts_(b, "\n\n");
			}
		}
		if (llama2)
			put_trimmed(b, t[i].content);
		else
			puts_(b, t[i].content);
		puts_(b, " [/INST]");
	}
}

int skipper_chat_format_turns(int tmpl, const struct skipper_chat_turn *t, size_t n, char **out,
                              struct skipper_error *err)
{
	struct sbuf b = { 0 };
	*out = NULL;
	for (size_t i = 0; i < n; i++)
		if (!t[i].role || !t[i].content ||
		    (strcmp(t[i].role, "user") && strcmp(t[i].role, "assistant") && !is_system(t, i)))
			return skipper_fail(err, SKIPPER_ERR_ARG, "chat: message %zu: role %s%s%s", i,
			                    t[i].role ? "'" : "", t[i].role ? t[i].role : "missing",
			                    t[i].role ? "' (system first, then user and assistant)" : "");
	if (!n || !strcmp(t[n - 1].role, "assistant") || is_system(t, n - 1))
		return skipper_fail(err, SKIPPER_ERR_ARG, "chat: the last message must be the user's");
	switch (tmpl) {
	case SKIPPER_CHAT_NONE:
		for (size_t i = 0; i < n; i++) {
			puts_(&b, t[i].content);
			if (i + 1 < n)
				puts_(&b, "\n\n");
		}
		break;
	case SKIPPER_CHAT_CHATML:
	case SKIPPER_CHAT_LLAMA3:
	case SKIPPER_CHAT_ZEPHYR:
		for (size_t i = 0; i < n; i++)
			put_turn(&b, tmpl, t[i].role, t[i].content, tmpl == SKIPPER_CHAT_LLAMA3);
		put_turn(&b, tmpl, "assistant", "", 0);
		/* the turn is opened, not closed: cut its end marker */
		b.n -= tmpl == SKIPPER_CHAT_CHATML ? strlen("<|im_end|>\n") :
		       tmpl == SKIPPER_CHAT_LLAMA3 ? strlen("<|eot_id|>") : strlen("</s>\n");
		if (b.p)
			b.p[b.n] = 0;
		break;
	case SKIPPER_CHAT_LLAMA2:
	case SKIPPER_CHAT_MISTRAL:
		if (!alternates(t, n))
			return skipper_fail(err, SKIPPER_ERR_UNSUPPORTED,
			                    "chat: the %s template takes user and assistant turns in turn, the user's first",
			                    skipper_chat_template_name(tmpl));
		put_inst(&b, tmpl, t, n);
		break;
	default:
		return skipper_fail(err, SKIPPER_ERR_ARG, "chat: unknown template %d", tmpl);
	}
	if (b.oom || !b.p) {
		free(b.p);
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "chat: out of memory");
	}
	*out = b.p;
	return SKIPPER_OK;
}

int skipper_chat_format(int tmpl, const char *sys, const char *user, char **out, struct skipper_error *err)
{
	struct skipper_chat_turn t[2] = { { "system", sys }, { "user", user } };
	*out = NULL;
	if (!user)
		return skipper_fail(err, SKIPPER_ERR_ARG, "chat: no user message");
	return skipper_chat_format_turns(tmpl, sys ? t : t + 1, sys ? 2 : 1, out, err);
}

/* A ChatML template that fills in a system turn when the conversation has
 * none carries it as a string literal: '<|im_start|>system\n...<|im_end|>'.
 * The newline may be a real one (as GGUF converters store it) or the
 * two characters \n of a Jinja escape. Occurrences that build the turn from
 * a variable (messages[0]['content'] ...) are skipped. */
char *skipper_chat_default_system(const char *j, size_t len)
{
	static const char head[] = "<|im_start|>system";
	static const char tail[] = "<|im_end|>";
	if (!j)
		return NULL;
	const char *end = j + len, *p = j;
	while ((p = memmem(p, (size_t)(end - p), head, sizeof head - 1))) {
		p += sizeof head - 1;
		const char *s = p;
		if (s < end && *s == '\n')
			s++;
		else if (end - s >= 2 && s[0] == '\\' && s[1] == 'n')
			s += 2;
		else
			continue;
		const char *e = memmem(s, (size_t)(end - s), tail, sizeof tail - 1);
		if (!e || e <= s)
			continue;
		size_t n = (size_t)(e - s);
		/* a literal ends at its quote: quotes or template syntax inside
		 * mean the text is assembled from variables */
		int literal = 1;
		for (const char *q = s; q < e; q++)
			if (*q == '\'' || *q == '"' || *q == '{' || *q == '}' || (*q == '\\' && q + 1 < e && q[1] != 'n'))
				literal = 0;
		if (!literal)
			continue;
		char *r = malloc(n + 1), *w = r;
		if (!r)
			return NULL;
		for (const char *q = s; q < e; q++) {
			if (q[0] == '\\' && q + 1 < e && q[1] == 'n') {
				*w++ = '\n';
				q++;
			} else {
				*w++ = *q;
			}
		}
		*w = 0;
		return r;
	}
	return NULL;
}
