/* Skip profiles (DESIGN §7) and the layer-list syntax "3,5,7-12".
 *
 * A profile is an INI file:
 *   [profile]  model, model_sha256, method, n_layers, created_by, dataset
 *   [mask]     attn = 3,5,7-12   mlp = ...
 *   [domain.NAME]  attn / mlp      (knn-router)
 *   [latency.DEVICE] c1, c2, c3 ... (knapspec)
 * plus any section a policy adds. Reading checks syntax, the [profile]
 * header and every attn/mlp list against n_layers; validation against a
 * model checks its SHA-256 and layer count. */
#ifndef SKIPPER_PROFILE_H
#define SKIPPER_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "skipper/status.h"

/* Largest layer count a list may name when no model bounds it. */
#define SKIPPER_LAYERS_MAX 4096

struct skipper_profile; /* opaque; the same tag policy.h hands to plugins */

/* Parse a layer list. "" and "none" are empty. With n_layer > 0 every layer
 * must be < n_layer and mask (if non-NULL) receives [n_layer] 0/1 entries;
 * with n_layer == 0 only the syntax is checked against SKIPPER_LAYERS_MAX.
 * Errors: SKIPPER_ERR_ARG (syntax), SKIPPER_ERR_RANGE (layer too large), with
 * a message naming the offending item and no file context. */
int skipper_layers_parse(const char *s, uint8_t *mask, int n_layer, struct skipper_error *err);

/* Canonical text: ascending, runs merged ("3,5,7-12"), "" when empty.
 * snprintf-like: returns the length needed, writes at most size bytes. */
int skipper_layers_format(const uint8_t *mask, int n_layer, char *buf, size_t size);

/* Empty profile (no sections). Free with skipper_profile_free. */
int skipper_profile_new(struct skipper_profile **out, struct skipper_error *err);

/* Read and check path. Errors name path:line. */
int skipper_profile_read(const char *path, struct skipper_profile **out, struct skipper_error *err);

/* SKIPPER_ERR_MISMATCH unless the profile was made for a model with this
 * SHA-256 (hex, any case) and layer count; the message names the file and
 * both values. model_sha256 NULL skips the hash check. */
int skipper_profile_validate(const struct skipper_profile *p, const char *model_sha256, int n_layer,
                             struct skipper_error *err);

/* Value of section.key or NULL; owned by p, valid until it changes. */
const char *skipper_profile_get(const struct skipper_profile *p, const char *section, const char *key);

/* Set (add or replace) section.key. Names must match [A-Za-z0-9_.-]+ and
 * values fit on one line without ';' or '#' and without surrounding blanks. */
int skipper_profile_set(struct skipper_profile *p, const char *section, const char *key, const char *value,
                        struct skipper_error *err);

/* Layer list at section.key into mask[n_layer]. n_layer must equal the
 * profile's n_layers (SKIPPER_ERR_MISMATCH otherwise), so a profile can
 * never write past the caller's buffer. SKIPPER_ERR_NOT_FOUND when absent. */
int skipper_profile_get_mask(const struct skipper_profile *p, const char *section, const char *key,
                             uint8_t *mask, int n_layer, struct skipper_error *err);
int skipper_profile_set_mask(struct skipper_profile *p, const char *section, const char *key,
                             const uint8_t *mask, int n_layer, struct skipper_error *err);

/* [profile] n_layers (0 if unset). */
int skipper_profile_n_layers(const struct skipper_profile *p);

/* i-th section in file order, NULL past the end. */
const char *skipper_profile_section(const struct skipper_profile *p, int i);

/* i-th entry in file order: 0 and its section, key and value (owned by p),
 * or -1 past the end. */
int skipper_profile_entry(const struct skipper_profile *p, int i, const char **section, const char **key,
                          const char **value);

/* File it was read from ("<new>" otherwise). */
const char *skipper_profile_source(const struct skipper_profile *p);

/* Write atomically (core/base/atomic.h): the whole profile or the old file. */
int skipper_profile_write(const struct skipper_profile *p, const char *path, struct skipper_error *err);

void skipper_profile_free(struct skipper_profile *p);

#endif
