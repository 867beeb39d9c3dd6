/* GET /metrics: the batch's counters and gauges and the answers by HTTP
 * status in Prometheus' text format (version 0.0.4), under the names vLLM
 * and llama-server use where they have one (vllm:spec_decode_*,
 * vllm:num_requests_running, ...), prefixed skipper:. */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

static const char *const source_names[SKIPPER_DRAFT_SOURCES] = { "layer_skip", "lookup", "ngram", "history" };

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP skipper:%s %s\n# TYPE skipper:%s %s\n", name, help, name, type);
}

static void counter(FILE *f, const char *name, const char *help, unsigned long long v)
{
	family(f, name, "counter", help);
	fprintf(f, "skipper:%s %llu\n", name, v);
}

static void gauge(FILE *f, const char *name, const char *help, double v)
{
	family(f, name, "gauge", help);
	fprintf(f, "skipper:%s %.17g\n", name, v);
}

static void by_source(FILE *f, const char *name, const char *help, const uint64_t *v)
{
	family(f, name, "counter", help);
	for (int i = 0; i < SKIPPER_DRAFT_SOURCES; i++)
		fprintf(f, "skipper:%s{source=\"%s\"} %llu\n", name, source_names[i], (unsigned long long)v[i]);
}

char *metrics_text(const struct skipper_batch_metrics *m, const atomic_ullong *codes)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	counter(f, "requests_total", "Requests that ended, however they ended.", m->requests);
	counter(f, "requests_failed_total", "Requests that ended with an error.", m->requests_failed);
	counter(f, "requests_cancelled_total", "Requests cancelled (client gone, or the server stopping).",
	        m->requests_cancelled);
	counter(f, "prompt_tokens_total", "Prompt tokens of the requests that ended.", m->prompt_tokens);
	counter(f, "generation_tokens_total", "Tokens generated.", m->generated_tokens);
	gauge(f, "num_requests_running", "Requests being decoded now.", m->running);
	gauge(f, "num_requests_waiting", "Requests waiting for a sequence now.", m->queued);
	gauge(f, "batch_size_max", "Requests decoded together at most (--parallel).", m->n_seq);
	gauge(f, "queue_size_max", "Requests that may wait beyond those ([server] max_queue).", m->max_queue);
	counter(f, "batch_passes_total", "Forward passes of the batch.", m->passes);
	counter(f, "batch_rows_total", "Rows over those passes (rows / passes: the mean batch size).", m->pass_rows);
	counter(f, "batch_draft_passes_total", "Layer-skip draft steps, each one pass for every sequence drafting with "
	        "the same skip mask.", m->draft_passes);
	counter(f, "batch_draft_rows_total", "Rows over those passes (one a drafting sequence).", m->draft_rows);
	family(f, "batch_busy_seconds_total", "counter", "Seconds spent in passes.");
	fprintf(f, "skipper:batch_busy_seconds_total %.6f\n", m->busy_seconds);
	by_source(f, "spec_decode_num_drafts_total", "Rounds that verified drafts, by draft source.", m->drafts);
	by_source(f, "spec_decode_num_draft_tokens_total", "Draft tokens verified, by draft source.", m->drafted);
	by_source(f, "spec_decode_num_accepted_tokens_total", "Draft tokens accepted, by draft source.", m->accepted);
	family(f, "http_requests_total", "counter", "HTTP requests answered, by status.");
	for (int c = 100; c < HTTP_CODES; c++) {
		unsigned long long n = atomic_load(&codes[c]);
		if (n)
			fprintf(f, "skipper:http_requests_total{code=\"%d\"} %llu\n", c, n);
	}
	if (fclose(f)) {
		free(text);
		return NULL;
	}
	return text;
}
