/* The cost-curve cache (core/engine/costs_cache.c) read as data: a curve
 * skipper measured and wrote reads back; every damaged or foreign variant
 * of it is refused with the file, the line and the reason (issue 56: a
 * link to /dev/zero hung, a FIFO blocked, 512-byte chunks parsed the tail
 * of a comment as a setting, and truncated rows, verify 8 9999,
 * step_seconds inf, attn inf, mlp 1e300 or every verify at 0.5 were taken
 * as measured); and the engine says so in one line before it measures
 * again (skipper_engine_costs_load), rewriting the file. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "engine/costs_cache.h"
#include "engine/engine.h"
#include "model/model.h"
#include "tap.h"
#include "testmodel.h"
#include "tokenizer/tokenizer.h"

static char dir[] = "/tmp/t-costs-XXXXXX", good[600], path[600], id[512];
static struct skipper_error err;
static char lines[64][SKIPPER_COSTS_LINE_MAX];
static int n_lines;

static void on_alarm(int sig)
{
	(void)sig;
	printf("Bail out! reading a cost cache blocked or ran on\n");
	_exit(1);
}

/* The good file's lines, and its measured_for. */
static void load_good(void)
{
	FILE *f = fopen(good, "r");
	n_lines = 0;
	while (f && n_lines < 64 && fgets(lines[n_lines], sizeof lines[0], f))
		n_lines++;
	if (f)
		fclose(f);
	for (int i = 0; i < n_lines; i++)
		if (!strncmp(lines[i], "measured_for ", 13)) {
			snprintf(id, sizeof id, "%s", lines[i] + 13);
			id[strcspn(id, "\n")] = '\0';
		}
	if (!n_lines || !id[0])
		BAIL("the measured cache has no measured_for line");
}

/* path = the good file with each line starting with edits[2k] replaced by
 * edits[2k + 1] (NULL: deleted), then tail appended. */
static void variant(const char *const *edits, int n_edits, const char *tail)
{
	FILE *f;
	unlink(path);
	if (!(f = fopen(path, "w")))
		BAIL("cannot write a cache variant");
	for (int i = 0; i < n_lines; i++) {
		const char *put = lines[i];
		for (int k = 0; k < n_edits; k += 2)
			if (!strncmp(lines[i], edits[k], strlen(edits[k])))
				put = edits[k + 1];
		if (put)
			fputs(put, f);
	}
	if (tail)
		fputs(tail, f);
	fclose(f);
}

/* path = the good file with its verify rows past last deleted. */
static void rows_up_to(int last)
{
	FILE *f;
	int n;
	unlink(path);
	if (!(f = fopen(path, "w")))
		BAIL("cannot write a cache variant");
	for (int i = 0; i < n_lines; i++)
		if (sscanf(lines[i], "verify %d", &n) != 1 || n <= last)
			fputs(lines[i], f);
	fclose(f);
}

/* Read path; want status and, in the message, path then `where` then `what`. */
static void refused(const char *name, int want, const char *where, const char *what)
{
	struct skipper_costs c;
	char prefix[700];
	int rc = skipper_costs_read(path, id, 32, &c, &err);
	snprintf(prefix, sizeof prefix, "%s%s", path, where);
	ok(rc == want && !strncmp(err.msg, prefix, strlen(prefix)) && strstr(err.msg, what), "%s: %s", name,
	   rc ? err.msg : "accepted");
	if (rc != want)
		diag("status %d, want %d", rc, want);
}

static void reader(void)
{
	struct skipper_costs c;
	char big[SKIPPER_COSTS_LINE_MAX + 100];

	unlink(path);
	is_int(skipper_costs_read(path, id, 32, &c, &err), SKIPPER_ERR_NOT_FOUND, "no file: SKIPPER_ERR_NOT_FOUND");
	variant(NULL, 0, NULL);
	int rc = skipper_costs_read(path, id, 32, &c, &err);
	ok(rc == SKIPPER_OK && c.n_max == 32 && c.verify[1] == 1 && c.step_seconds > 0,
	   "the file skipper wrote reads back%s%s", rc ? ": " : "", rc ? err.msg : "");

	alarm(20);
	unlink(path);
	if (symlink("/dev/zero", path))
		BAIL("symlink");
	refused("a link to /dev/zero (hung generate forever)", SKIPPER_ERR_IO, ": cost cache", "not a regular file");
	unlink(path);
	mkfifo(path, 0600);
	refused("a FIFO (blocked on open)", SKIPPER_ERR_IO, ": cost cache", "not a regular file");
	unlink(path);
	mkdir(path, 0700);
	refused("a directory", SKIPPER_ERR_IO, ": cost cache", "is a directory");
	rmdir(path);
	alarm(0);

	rows_up_to(3);
	refused("rows cut after verify 3 (once extrapolated)", SKIPPER_ERR_FORMAT, ": ",
	        "rows 1 to 3, where a curve at this context has 1 to 32");

	variant(NULL, 0, "verify 3");
	refused("a last line cut short", SKIPPER_ERR_FORMAT, ":", "the last line has no end");

	static const char *const v8[] = { "verify 8 ", "verify 8 9999\n" };
	variant(v8, 2, NULL);
	refused("verify 8 9999", SKIPPER_ERR_FORMAT, ":", "verify: 9999 is out of range [1, 8]");
	static const char *const step[] = { "step_seconds ", "step_seconds inf\n" };
	variant(step, 2, NULL);
	refused("step_seconds inf", SKIPPER_ERR_FORMAT, ":3: ", "step_seconds: 'inf' is not a number");
	static const char *const attn[] = { "attn ", "attn inf\n" };
	variant(attn, 2, NULL);
	refused("attn inf", SKIPPER_ERR_FORMAT, ":6: ", "attn: 'inf' is not a number");
	static const char *const mlp[] = { "mlp ", "mlp 1e300\n" };
	variant(mlp, 2, NULL);
	refused("mlp 1e300", SKIPPER_ERR_FORMAT, ":7: ", "mlp: 1e+300 is out of range [0, 1]");
	static const char *const half[] = { "verify 1 ", "verify 1 0.5\n" };
	variant(half, 2, NULL);
	refused("verify 1 at 0.5 (every verify at 0.5 drafted 28 tokens instead of 3)", SKIPPER_ERR_FORMAT, ":11: ",
	        "verify: 0.5 is out of range [1, 1]");
	static const char *const one[] = { "verify 1 ", "verify 1 1.5\n" };
	variant(one, 2, NULL);
	refused("verify 1 is the step itself", SKIPPER_ERR_FORMAT, ":11: ", "verify: 1.5 is out of range [1, 1]");
	static const char *const down[] = { "verify 3 ", "verify 3 1.0000\n", "verify 2 ", "verify 2 1.2000\n" };
	variant(down, 4, NULL);
	refused("a curve that falls", SKIPPER_ERR_FORMAT, ":13: ", "verify 3: 1, less than the 1.2 of verify 2");
	static const char *const high[] = { "verify 6 ", "verify 6 16.5\n" };
	variant(high, 2, NULL);
	refused("a pass over 6 rows at 16.5 steps", SKIPPER_ERR_FORMAT, ":16: ", "out of range [1, 6]");
	static const char *const order[] = { "verify 2 ", "verify 3 1.3\n", "verify 3 ", "verify 2 1.2\n" };
	variant(order, 4, NULL);
	refused("rows out of order", SKIPPER_ERR_FORMAT, ":12: ", "verify 3 where verify 2 was due");

	memset(big, 'c', sizeof big);
	memcpy(big, "# ", 2);
	strcpy(big + 600 - 13, "verify 3 0.5\n");
	static const char *longc[2] = { "# skipper", NULL };
	longc[1] = big;
	variant(longc, 2, NULL);
	refused("a comment of 600 bytes (its tail was parsed as a setting)", SKIPPER_ERR_FORMAT, ":1: ",
	        "line longer than any the cache holds");
	strcpy(big + 300, " verify 3 0.5\n");
	variant(longc, 2, NULL);
	ok(skipper_costs_read(path, id, 32, &c, &err) == SKIPPER_OK && c.verify[3] >= 1,
	   "a comment ending in 'verify 3 0.5' stays a comment (verify 3 = %g)", c.verify[3]);

	variant(NULL, 0, NULL);
	{
		int fd = open(path, O_WRONLY | O_APPEND);
		if (fd < 0 || write(fd, "# a\0b\n", 6) != 6)
			BAIL("cannot append");
		close(fd);
	}
	refused("a NUL byte", SKIPPER_ERR_FORMAT, ":", "NUL byte in a text file");

	static const char *const hex[] = { "step_seconds ", "step_seconds 0x1p-10\n" };
	variant(hex, 2, NULL);
	refused("a hex number", SKIPPER_ERR_FORMAT, ":3: ", "'0x1p-10' is not a number");
	variant(NULL, 0, "head 0.5\n");
	refused("a key twice", SKIPPER_ERR_FORMAT, ":", "head again (first on line 4)");
	variant(NULL, 0, "speed 3\n");
	refused("an unknown key", SKIPPER_ERR_FORMAT, ":", "unknown key 'speed'");
	static const char *const noid[] = { "measured_for ", NULL };
	variant(noid, 2, NULL);
	refused("no measured_for", SKIPPER_ERR_FORMAT, ": ", "no measured_for line");
	static const char *const other[] = { "measured_for ", "measured_for cuda llama 2 layers\n" };
	variant(other, 2, NULL);
	refused("measured for another backend", SKIPPER_ERR_MISMATCH, ":2: ", "measured for cuda llama 2 layers, not for");
	static const char *const dh[] = { "head ", "head 0.100000\n", "draft_head ", "draft_head 0.200000\n" };
	variant(dh, 4, NULL);
	refused("a draft head dearer than the head", SKIPPER_ERR_FORMAT, ":5: ", "draft_head 0.2 is more than head 0.1");
	static const char *const xr[] = { "context_row ", "context_row 0.001\n", "context_extra_row ",
		                          "context_extra_row 0.002\n" };
	variant(xr, 4, NULL);
	refused("a further row that adds more than the first", SKIPPER_ERR_FORMAT, ":10: ",
	        "context_extra_row 0.002 is more than context_row 0.001");
	static const char *const half_tok[] = { "context ", "context 128.5\n" };
	variant(half_tok, 2, NULL);
	refused("a context of 128.5 tokens", SKIPPER_ERR_FORMAT, ":8: ", "context: 128.5 is not a whole number of tokens");
	static const char *const no_ctx[] = { "context ", NULL };
	variant(no_ctx, 2, NULL);
	refused("a cache written before the context was measured (measured again)", SKIPPER_ERR_FORMAT, ": ",
	        "no context line");
	static const char *const h0[] = { "head ", "head 0\n" };
	variant(h0, 2, NULL);
	refused("a head that costs nothing", SKIPPER_ERR_FORMAT, ":4: ", "head: 0 is out of range (0, 1]");
	variant(NULL, 0, "verify 33 33\n");
	refused("a row past the largest", SKIPPER_ERR_FORMAT, ":", "'33' is not a row count (1 to 32)");
	{
		FILE *f;
		variant(NULL, 0, NULL);
		f = fopen(path, "a");
		for (int i = 0; i < 2000; i++)
			fputs("# a comment line, many of them, to make the file large\n", f);
		fclose(f);
	}
	refused("a file over 64 KiB", SKIPPER_ERR_FORMAT, ": cost cache", "more than any valid one (65536)");
}

/* The notes an engine gives (struct skipper_engine_opts.note). */
static char notes[4][1200];
static int n_notes;

static void on_note(void *ctx, const char *msg)
{
	if (n_notes < 4)
		snprintf(notes[n_notes++], sizeof notes[0], "%s", msg);
}

/* An engine that caches its curve at path and notes what it does. */
static struct skipper_engine *noting_engine(struct skipper_backend *be, const struct skipper_tokenizer *tok)
{
	struct skipper_engine_opts o = { .cost_cache = path, .note = on_note };
	struct skipper_engine *e;
	if (skipper_engine_new(be, tok, &o, &e, &err))
		BAIL(err.msg);
	n_notes = 0;
	return e;
}

/* The engine: a refused cache is reported in one line, then measured again
 * and rewritten; a directory in the cache's place is reported, not read,
 * and the costs are measured all the same. */
static void engine(struct skipper_backend *be, const struct skipper_tokenizer *tok)
{
	struct skipper_engine *e;
	const struct skipper_costs *c;
	struct skipper_costs back;
	char want[800];

	static const char *const v8[] = { "verify 8 ", "verify 8 9999\n" };
	variant(v8, 2, NULL);
	e = noting_engine(be, tok);
	snprintf(want, sizeof want, "%s:18: verify: 9999 is out of range [1, 8]: ignored, measuring again", path);
	if (skipper_engine_costs(e, &c, &err))
		BAIL(err.msg);
	is_int(n_notes, 2, "the engine refuses verify 8 9999, then measures: two notes");
	is_str(notes[0], want, "the first says why, in one line");
	ok(strstr(notes[1], "measuring what verification and drafting cost") != NULL, "the second what follows: %s",
	   notes[1]);
	ok(c->verify[8] <= 8, "measured again (verify 8: %g)", c->verify[8]);
	ok(skipper_costs_read(path, id, 32, &back, &err) == SKIPPER_OK && back.verify[8] <= 8,
	   "and the cache rewritten with the measurement");
	skipper_engine_free(e);

	alarm(60);
	unlink(path);
	if (symlink("/dev/zero", path))
		BAIL("symlink");
	e = noting_engine(be, tok);
	ok(!skipper_engine_costs(e, &c, &err) && n_notes == 2 && strstr(notes[0], "not a regular file") &&
	       strstr(notes[0], "measuring again"),
	   "a link to /dev/zero: reported, not read (%s)", notes[0]);
	skipper_engine_free(e);
	unlink(path);
	mkdir(path, 0700);
	e = noting_engine(be, tok);
	ok(!skipper_engine_costs(e, &c, &err) && n_notes == 2 && strstr(notes[0], "is a directory"),
	   "a directory: reported (%s)", notes[0]);
	skipper_engine_free(e);
	alarm(0);
	rmdir(path);
	unlink(path);
	e = noting_engine(be, tok);
	ok(!skipper_engine_costs(e, &c, &err) && n_notes == 1 && strstr(notes[0], "measuring what"),
	   "no file: only the measurement is noted (%s)", notes[0]);
	skipper_engine_free(e);
}

int main(void)
{
	struct skipper_test_model_opts o;
	struct skipper_model *model = NULL;
	struct skipper_tokenizer *tok = NULL;
	struct skipper_backend *be = NULL;
	struct skipper_engine *e = NULL;
	struct skipper_backend_opts bo = { .n_ctx = 1024, .n_threads = 1, .kind = SKIPPER_BACKEND_CPU };
	const struct skipper_costs *c;
	char mfile[600], cmd[700];

	signal(SIGALRM, on_alarm);
	if (!mkdtemp(dir))
		BAIL("mkdtemp");
	snprintf(mfile, sizeof mfile, "%s/m.gguf", dir);
	snprintf(good, sizeof good, "%s/good.costs", dir);
	snprintf(path, sizeof path, "%s/m.costs", dir);
	skipper_test_model_defaults(&o);
	o.n_layer = 2;
	if (skipper_test_model_write(mfile, &o) || skipper_model_load(mfile, &model, &err) ||
	    skipper_tokenizer_from_gguf(model->gguf, &tok, &err) || skipper_backend_create(&model->view, &bo, &be, &err) ||
	    skipper_engine_new(be, tok, &(struct skipper_engine_opts){ .cost_cache = good }, &e, &err))
		BAIL(err.msg);
	/* the file as the engine measures and writes it */
	if (skipper_engine_costs(e, &c, &err))
		BAIL(err.msg);
	load_good();
	/* the test model's attention is most of its step: after 992 tokens a
	 * pass costs several times what it costs after 128 */
	ok(c->ctx == 128 && c->ctx_row > 0 && c->ctx_extra_row <= c->ctx_row,
	   "what the context adds is measured: context %d, %g steps a token for one row, %g for each further row", c->ctx,
	   c->ctx_row, c->ctx_extra_row);
	reader();
	engine(be, tok);

	skipper_engine_free(e);
	be->ops->destroy(be);
	skipper_tokenizer_free(tok);
	skipper_model_free(model);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return tap_done();
}
