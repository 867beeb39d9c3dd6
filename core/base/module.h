/* Finding and loading the modules skipper dlopen()s (policy plugins, the
 * CUDA backend module): one search path, one load sequence.
 *
 * Search path, first hit wins: a directory the caller names first ([policy]
 * plugin_dir), each entry of $SKIPPER_PLUGIN_PATH (a colon list; empty
 * entries skipped), then SKIPPER_PLUGINDIR (where `make install` puts
 * them). */
#ifndef SKIPPER_MODULE_H
#define SKIPPER_MODULE_H

#include <stddef.h>

#include "skipper/status.h"

struct skipper_module_path {
	const char **dir; /* n directories in search order */
	size_t n;
	char *buf_;       /* the copy of $SKIPPER_PLUGIN_PATH dir points into */
};

/* Fill mp (free it with skipper_module_path_free) with first (NULL or "":
 * none) and the rest of the path as above. SKIPPER_ERR_NOMEM on failure. */
int skipper_module_path_get(struct skipper_module_path *mp, const char *first);
void skipper_module_path_free(struct skipper_module_path *mp);

/* DIR/file for the first directory of mp that holds file (malloc'ed, the
 * caller frees it), or NULL when none does (or out of memory). tried gets
 * the directories looked in, ", "-separated and cut to tcap, for a
 * message. */
char *skipper_module_find(const struct skipper_module_path *mp, const char *file, char *tried, size_t tcap);

/* dlopen() the module at path (a regular file: a FIFO or a device is
 * refused before dlopen would block on it) with RTLD_NOW | RTLD_LOCAL, and
 * RTLD_NODELETE when resident (it then stays mapped after dlclose), and
 * look up its entry symbol. Returns the handle (dlclose it) with *fn the
 * entry point, or NULL with err "PATH: cannot load WHAT: ..." or "PATH:
 * not a WHAT: no exported ENTRY" (SKIPPER_ERR_PLUGIN; SKIPPER_ERR_NOT_FOUND
 * when path does not exist). */
void *skipper_module_open(const char *path, const char *what, const char *entry, int resident, void (**fn)(void),
                          struct skipper_error *err);

#endif
