/* Benchmark prompts from JSONL files. */
#include <jansson.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/file.h"
#include "base/text.h"
#include "bench.h"
#include "cli.h"

static char *str_field(json_t *o, const char *const *names)
{
	for (; *names; names++) {
		json_t *v = json_object_get(o, *names);
		if (json_is_string(v))
			return strdup(json_string_value(v));
		if (json_is_integer(v)) {
			char buf[32];
			snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
			return strdup(buf);
		}
	}
	return NULL;
}

/* A JSONL line may be long (a summarisation prompt) but not endless:
 * /dev/zero must not be read until memory runs out. */
#define PROMPT_LINE_MAX ((size_t)64 << 20)
#define PROMPT_FILE_MAX (1LL << 32)

int bench_load_prompts(const char *path, struct bench_prompt **out, int *n, char *errbuf, size_t errlen)
{
	static const char *const text_keys[] = { "prompt", "text", "instruction", NULL };
	static const char *const id_keys[] = { "question_id", "id", NULL };
	static const char *const cat_keys[] = { "category", NULL };
	struct skipper_error ferr = { 0 };
	FILE *f = skipper_open_regular(path, "r", PROMPT_FILE_MAX, "prompt file", &ferr);
	struct bench_prompt *p = NULL;
	char *line = NULL;
	size_t cap = 0;
	int count = 0, lineno = 0;
	long len;

	if (!f) {
		snprintf(errbuf, errlen, "%s", ferr.msg);
		return -1;
	}
	while ((len = skipper_read_line(f, &line, &cap, PROMPT_LINE_MAX)) != -1) {
		json_error_t je;
		json_t *o, *turns;
		struct bench_prompt bp = { 0 };
		lineno++;
		if (len < 0) {
			snprintf(errbuf, errlen, "%s:%d: %s", path, lineno,
			         len == -2 ? "line longer than 64 MiB" : len == -3 ? "NUL byte in line" : "out of memory");
			goto fail;
		}
		if (strspn(line, " \t\r\n") == strlen(line))
			continue;
		if (!(o = json_loads(line, 0, &je)) || !json_is_object(o)) {
			snprintf(errbuf, errlen, "%s:%d: not a JSON object%s%s", path, lineno, o ? "" : ": ",
			         o ? "" : je.text);
			json_decref(o);
			goto fail;
		}
		turns = json_object_get(o, "turns");
		if (json_is_array(turns) && json_is_string(json_array_get(turns, 0)))
			bp.text = strdup(json_string_value(json_array_get(turns, 0)));
		else
			bp.text = str_field(o, text_keys);
		bp.id = str_field(o, id_keys);
		bp.category = str_field(o, cat_keys);
		json_t *cat = json_object_get(o, "category");
		if (cat && !json_is_string(cat) && !json_is_null(cat)) {
			snprintf(errbuf, errlen, "%s:%d: \"category\" is %s, not a string", path, lineno,
			         json_is_number(cat) ? "a number" : "not text");
			json_decref(o);
			free(bp.text);
			free(bp.id);
			free(bp.category);
			goto fail;
		}
		json_decref(o);
		if (!bp.text) {
			snprintf(errbuf, errlen, "%s:%d: no prompt (expected \"turns\", \"prompt\", \"text\" or \"instruction\")",
			         path, lineno);
			free(bp.id);
			free(bp.category);
			goto fail;
		}
		if (!bp.category)
			bp.category = strdup("all");
		if (!bp.id) {
			char buf[32];
			snprintf(buf, sizeof buf, "%d", lineno);
			bp.id = strdup(buf);
		}
		struct bench_prompt *np = realloc(p, (size_t)(count + 1) * sizeof *np);
		if (!np || !bp.category || !bp.id) {
			free(bp.text);
			free(bp.id);
			free(bp.category);
			if (np)
				p = np;
			snprintf(errbuf, errlen, "out of memory");
			goto fail;
		}
		p = np;
		p[count++] = bp;
	}
	if (ferror(f)) {
		snprintf(errbuf, errlen, "%s: %s", path, strerror(errno));
		goto fail;
	}
	free(line);
	fclose(f);
	if (!count) {
		snprintf(errbuf, errlen, "%s: no prompts", path);
		free(p);
		return -1;
	}
	*out = p;
	*n = count;
	return 0;
fail:
	free(line);
	fclose(f);
	bench_free_prompts(p, count);
	return -1;
}

void bench_free_prompts(struct bench_prompt *p, int n)
{
	for (int i = 0; i < n; i++) {
		free(p[i].id);
		free(p[i].category);
		free(p[i].text);
	}
	free(p);
}
