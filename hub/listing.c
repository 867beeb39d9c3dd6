/* Parser for the hub's model listing (api/models/{repo}/revision/{rev}).
 * The reply is untrusted input: every field is type-checked and any unsafe
 * entry rejects the whole listing, so a hostile hub cannot smuggle one bad
 * name past a pull of "everything". */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/error.h"
#include "hub/hub.h"

#define SKIPPER_HUB_MAX_FILES 100000

static int commit_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 128)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s))
			return 0;
	return 1;
}

static int hex_ok(const char *s, size_t n)
{
	if (strlen(s) != n)
		return 0;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* A printable, bounded rendering of an untrusted name for error messages. */
static void quote_name(char *dst, size_t cap, const char *s)
{
	size_t o = 0;
	for (; *s && o + 5 < cap; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(dst + o, cap - o, "\\x%02x", c);
		else
			dst[o++] = (char)c;
	}
	dst[o] = '\0';
}

static int get_size(json_t *v, long long *out)
{
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (long long)json_integer_value(v);
	return 0;
}

static int parse_sibling(json_t *sib, size_t i, long long max_size, struct skipper_hub_file *f,
                         struct skipper_error *err)
{
	json_t *name = json_object_get(sib, "rfilename"), *lfs, *oid;
	char shown[256];
	size_t len;

	if (!json_is_object(sib) || !json_is_string(name))
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "listing: siblings[%zu] has no rfilename string", i);
	len = json_string_length(name);
	quote_name(shown, sizeof shown, json_string_value(name));
	if (strlen(json_string_value(name)) != len || !skipper_hub_path_ok(json_string_value(name)))
		return skipper_fail(err, SKIPPER_ERR_FORMAT,
		                    "listing refused: unsafe file name \"%s\" (absolute, \"..\", NUL, backslash or control character)",
		                    shown);
	f->size = -1;
	f->sha256[0] = '\0';
	f->git_oid[0] = '\0';
	if (get_size(json_object_get(sib, "size"), &f->size) < 0)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "listing: bad size for \"%s\"", shown);
	lfs = json_object_get(sib, "lfs");
	if (lfs && !json_is_null(lfs)) {
		json_t *sha = json_object_get(lfs, "sha256");
		long long lsize = -1;
		if (!json_is_object(lfs) || !json_is_string(sha) || !hex_ok(json_string_value(sha), 64))
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "listing: bad lfs.sha256 for \"%s\"", shown);
		if (get_size(json_object_get(lfs, "size"), &lsize) < 0)
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "listing: bad lfs.size for \"%s\"", shown);
		if (lsize >= 0) {
			if (f->size >= 0 && f->size != lsize)
				return skipper_fail(err, SKIPPER_ERR_FORMAT, "listing: size and lfs.size differ for \"%s\"",
				                    shown);
			f->size = lsize;
		}
		for (int k = 0; k < 64; k++)
			f->sha256[k] = (char)tolower((unsigned char)json_string_value(sha)[k]);
		f->sha256[64] = '\0';
	}
	oid = json_object_get(sib, "blobId");
	if (oid && !json_is_null(oid)) {
		if (!json_is_string(oid) || !hex_ok(json_string_value(oid), 40))
			return skipper_fail(err, SKIPPER_ERR_FORMAT, "listing: bad blobId for \"%s\"", shown);
		for (int k = 0; k < 40; k++)
			f->git_oid[k] = (char)tolower((unsigned char)json_string_value(oid)[k]);
		f->git_oid[40] = '\0';
	}
	if (f->size > max_size)
		return skipper_fail(err, SKIPPER_ERR_RANGE,
		                    "listing refused: \"%s\" is %lld bytes, over the limit of %lld ([hub] max_file_size)",
		                    shown, f->size, max_size);
	f->path = strdup(json_string_value(name));
	if (!f->path)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	return SKIPPER_OK;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Two entries with one name would make the snapshot ambiguous. Sorting keeps
 * this O(n log n) on hostile listings with many files. */
static int check_duplicates(const struct skipper_hub_listing *l, struct skipper_error *err)
{
	char **names = malloc((l->n_files + 1) * sizeof *names);
	int rc = SKIPPER_OK;

	if (!names)
		return skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < l->n_files; i++)
		names[i] = l->files[i].path;
	qsort(names, l->n_files, sizeof *names, cmp_path);
	for (size_t i = 1; i < l->n_files; i++)
		if (strcmp(names[i - 1], names[i]) == 0) {
			rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "listing refused: \"%s\" listed twice", names[i]);
			break;
		}
	free(names);
	return rc;
}

int skipper_hub_listing_parse(const char *json, size_t len, long long max_file_size,
                              struct skipper_hub_listing *out, struct skipper_error *err)
{
	json_error_t jerr;
	json_t *root, *sha, *sibs;
	int rc = SKIPPER_OK;

	memset(out, 0, sizeof *out);
	if (max_file_size <= 0)
		max_file_size = 64LL << 30;
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return skipper_fail(err, SKIPPER_ERR_FORMAT, "listing: invalid JSON at line %d: %s", jerr.line, jerr.text);
	sha = json_object_get(root, "sha");
	sibs = json_object_get(root, "siblings");
	if (!json_is_object(root) || !json_is_string(sha) || !json_is_array(sibs)) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "listing: expected an object with \"sha\" and \"siblings\"");
		goto out;
	}
	if (!commit_ok(json_string_value(sha)) || strlen(json_string_value(sha)) != json_string_length(sha)) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "listing refused: commit id is not alphanumeric");
		goto out;
	}
	if (json_array_size(sibs) > SKIPPER_HUB_MAX_FILES) {
		rc = skipper_fail(err, SKIPPER_ERR_FORMAT, "listing refused: more than %d files", SKIPPER_HUB_MAX_FILES);
		goto out;
	}
	out->commit = strdup(json_string_value(sha));
	out->files = calloc(json_array_size(sibs) + 1, sizeof *out->files);
	if (!out->commit || !out->files) {
		rc = skipper_fail(err, SKIPPER_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < json_array_size(sibs); i++) {
		rc = parse_sibling(json_array_get(sibs, i), i, max_file_size, &out->files[i], err);
		if (rc)
			goto out;
		out->n_files++;
	}
	rc = check_duplicates(out, err);
out:
	json_decref(root);
	if (rc)
		skipper_hub_listing_free(out);
	return rc;
}

void skipper_hub_listing_free(struct skipper_hub_listing *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n_files; i++)
		free(l->files[i].path);
	free(l->files);
	free(l->commit);
	memset(l, 0, sizeof *l);
}
