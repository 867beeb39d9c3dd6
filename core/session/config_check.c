/* A configuration checked as a whole before anything is loaded: every
 * key against the table, and the policies' sections by their plugins. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "policy/policy_builtin.h"
#include "policy/policy_host.h"
#include "session.h"

static const struct skipper_policy *const builtins[] = { &skipper_policy_none, &skipper_policy_lookup, NULL };

void session_policy_search(const struct skipper_config *cfg, struct skipper_policy_search *search)
{
	const char *dir = skipper_config_get(cfg, "policy", "plugin_dir");
	search->plugin_dir = dir && *dir ? dir : NULL;
	search->builtins = builtins;
}

/* For skipper_config_validate: is SECTION an installed policy? */
static int policy_section_ok(const char *section, void *cfg)
{
	struct skipper_policy_search search;
	session_policy_search(cfg, &search);
	return skipper_policy_exists(section, &search);
}

/* A section of another policy than the configured one (a file that keeps
 * several policies' sections): its plugin must load and know each key. */
static int check_other_section(const struct skipper_config_entry *first, const struct skipper_policy_search *search,
                               const struct skipper_config *cfg, struct skipper_error *err)
{
	struct skipper_policy_lib *lib = NULL;
	int rc = skipper_policy_load(first->section, search, &lib, err);

	if (rc)
		return first->line > 0 ? skipper_fail_prefix(err, "%s:%d: [%s]", first->file, first->line, first->section)
		                       : skipper_fail_prefix(err, "%s: [%s]", first->file, first->section);
	rc = skipper_policy_check_keys(lib, cfg, err);
	skipper_policy_unload(lib);
	return rc;
}

/* Policy sections are checked by their plugins, with no model bound, so a
 * typo there is reported before any model loads: the configured policy's
 * section in full, every other policy's section key by key. */
static int check_policy_keys(const struct skipper_config *cfg, struct skipper_error *err)
{
	struct skipper_policy_search search;
	struct skipper_policy_lib *lib = NULL;
	const struct skipper_config_entry *e;
	const char *name = skipper_config_get(cfg, "policy", "name"), *why = NULL;
	struct stat st;
	int rc;

	session_policy_search(cfg, &search);
	if (search.plugin_dir)
		why = stat(search.plugin_dir, &st) != 0 ? strerror(errno) : !S_ISDIR(st.st_mode) ? "not a directory" : NULL;
	if (why) {
		e = skipper_config_find(cfg, "policy", "plugin_dir");
		return e->line > 0 ? skipper_fail(err, SKIPPER_ERR_CONFIG, "%s:%d: [policy] plugin_dir %s: %s", e->file,
		                                  e->line, e->value, why)
		                   : skipper_fail(err, SKIPPER_ERR_CONFIG, "%s: [policy] plugin_dir %s: %s", e->file,
		                                  e->value, why);
	}
	if ((rc = skipper_policy_load(name, &search, &lib, err)))
		return rc;
	rc = skipper_policy_check_config(lib, cfg, err);
	skipper_policy_unload(lib);
	for (size_t i = 0; !rc && (e = skipper_config_entry_at(cfg, i)); i++) {
		int seen = skipper_config_core_section(e->section) || !strcmp(e->section, name);
		for (size_t j = 0; !seen && j < i; j++)
			seen = !strcmp(skipper_config_entry_at(cfg, j)->section, e->section);
		if (!seen)
			rc = check_other_section(e, &search, cfg, err);
	}
	return rc;
}

int skipper_config_check(const struct skipper_config *cfg, struct skipper_error *err)
{
	int rc = skipper_config_validate(cfg, policy_section_ok, (void *)cfg, err);
	return rc ? rc : check_policy_keys(cfg, err);
}
