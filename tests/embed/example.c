/* An embedding of libskipper: skipper(3)'s example. Generates an answer to
 * argv[1] with context-lookup drafts (policy lookup) on the default model,
 * further settings as "section.key=value" arguments, then prints the
 * speculation statistics on stderr. Build with
 *   cc example.c $(pkg-config --cflags --libs skipper) */
#include <stdio.h>
#include <string.h>

#include <skipper/skipper.h>

static int print_text(void *ctx, const char *text, size_t len, int32_t token)
{
	(void)ctx;
	(void)token;
	return fwrite(text, 1, len, stdout) != len; /* stop when nobody reads */
}

static void print_note(void *ctx, int level, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s%s\n", level <= SKIPPER_LOG_WARN ? "note: " : "", msg);
}

int main(int argc, char **argv)
{
	struct skipper_session_hooks hooks = { .log = print_note };
	struct skipper_config *cfg = NULL;
	struct skipper_session *s = NULL;
	struct skipper_error err = { 0 };
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: %s PROMPT [SECTION.KEY=VALUE]...\n", argv[0]);
		return 2;
	}
	rc = skipper_config_new(&cfg, &err);
	if (!rc)
		rc = skipper_config_set(cfg, "policy.name=lookup", &err);
	for (int i = 2; !rc && i < argc; i++)
		rc = skipper_config_set(cfg, argv[i], &err);
	if (!rc)
		rc = skipper_session_open(cfg, &hooks, &s, &err);
	if (!rc) {
		struct skipper_message m = { "user", argv[1] };
		const struct skipper_session_info *info = skipper_session_info(s);
		fprintf(stderr, "%s on %s, policy %s\n", info->model, info->backend, info->policy);
		rc = skipper_session_generate(s, &m, 1, NULL, print_text, NULL, &err);
		putchar('\n');
	}
	if (!rc) {
		const struct skipper_run_stats *st = skipper_session_stats(s);
		fprintf(stderr, "generated %d tokens, %d verify passes, lookup drafted %d accepted %d\n", st->n_generated,
		        st->rounds, st->lookup_drafted, st->lookup_accepted);
	} else {
		fprintf(stderr, "error: %s (%s)\n", err.msg, skipper_strerror(rc));
	}
	skipper_session_close(s);
	skipper_config_free(cfg);
	return rc ? 1 : 0;
}
