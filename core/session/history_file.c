/* [lookup] history: drafts from earlier requests, kept in memory for the
 * session's life (memory) or in a file too, loaded when the session opens
 * and saved when it closes (a path). A file that is damaged, foreign or
 * too large is reported in one line and the session starts with an empty
 * history: drafts never change an output, so nothing depends on it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "engine/history.h"
#include "session.h"

/* Is lookup (and so its history) on in cfg? */
static int lookup_on(const struct skipper_config *cfg)
{
	int on = 0;
	skipper_config_get_bool(cfg, "policy", "lookup", &on, NULL);
	return on || !strcmp(skipper_config_get(cfg, "policy", "name"), "lookup");
}

/* The file is written when the session closes: say now, not after a
 * long run, that it cannot be. */
static int check_writable(const char *path, struct skipper_error *err)
{
	struct stat st;
	char dir[4096];
	const char *slash = strrchr(path, '/');

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "[lookup] history = %s: not a regular file", path);
	if (!slash)
		snprintf(dir, sizeof dir, ".");
	else
		snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (access(dir, W_OK | X_OK) != 0)
		return skipper_fail(err, SKIPPER_ERR_CONFIG, "[lookup] history = %s: cannot write in %s: %s", path, dir,
		                    strerror(errno));
	return SKIPPER_OK;
}

int session_history_new(struct skipper_session *s, struct skipper_history **out, struct skipper_error *err)
{
	long mb = 64;
	const char *sha;
	int rc;

	*out = NULL;
	skipper_config_get_int(s->cfg, "lookup", "history_mb", &mb, NULL);
	if (!(sha = session_model_sha256(s, err)))
		return err->status;
	if ((rc = skipper_history_new((size_t)mb << 20, sha, s->model->view.hp.n_vocab, out, err)))
		return skipper_fail_prefix(err, "[lookup] history_mb = %ld", mb);
	return SKIPPER_OK;
}

int session_history_open(struct skipper_session *s, struct skipper_error *err)
{
	const char *what = skipper_config_get(s->cfg, "lookup", "history");
	struct skipper_error why = { 0 };
	int rc;

	if (!what || !strcmp(what, "off") || !lookup_on(s->cfg))
		return SKIPPER_OK;
	if ((rc = session_history_new(s, &s->history, err)))
		return rc;
	if (!strcmp(what, "memory"))
		return SKIPPER_OK;
	if ((rc = check_writable(what, err)))
		return rc;
	s->history_file = what;
	/* a file written under any history_mb loads (its newest part if this
	 * bound is smaller): 4 bytes a token of at most 16384 MiB's worth */
	if (access(what, F_OK) == 0 &&
	    skipper_history_load(s->history, what, ((size_t)16384 << 20) / HISTORY_BYTES_PER_TOKEN * 4 + 4096, &why))
		session_log(s, SKIPPER_LOG_WARN, "warning: [lookup] history: %s; starting with an empty history", why.msg);
	return SKIPPER_OK;
}

int session_history_close(struct skipper_session *s, struct skipper_error *err)
{
	int rc = SKIPPER_OK;
	if (s->history && s->history_file)
		rc = skipper_history_save(s->history, s->history_file, err);
	skipper_history_free(s->history);
	s->history = NULL;
	return rc;
}
