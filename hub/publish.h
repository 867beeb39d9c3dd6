/* Write a static hub tree that any web server can serve (see publish.c). */
#ifndef SKIPPER_HUB_PUBLISH_H
#define SKIPPER_HUB_PUBLISH_H

#include "skipper/status.h"

/* Publish every regular file under src_dir (hidden names skipped) as
 * repo@revision into out_root:
 *   out_root/api/models/REPO/revision/{REVISION,COMMIT}  listing JSON
 *   out_root/REPO/resolve/COMMIT/PATH                     file copies (hard links when possible)
 *   out_root/REPO/resolve/REVISION -> COMMIT              symlink, switched atomically
 * COMMIT is 40 hex digits derived from the contents, so republishing the
 * same files gives the same commit. profiles_only refuses names that are
 * not profile data (skipper_hub_profile_name_ok). commit (41 bytes) may be
 * NULL. */
int skipper_hub_publish(const char *src_dir, const char *out_root, const char *repo, const char *revision,
                        int profiles_only, char *commit, struct skipper_error *err);

#endif
