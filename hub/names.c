/* Checks on names that come from a hub listing or the command line. Every
 * name ends up in a filesystem path, so anything that could climb out of the
 * cache (absolute paths, "..", backslashes read as separators elsewhere,
 * control characters that hide in terminals) is refused up front. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "hub/hub.h"

#define SKIPPER_HUB_NAME_MAX 1024

static int component_ok(const char *s, size_t n)
{
	if (n == 0)
		return 0;
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return 0;
	return 1;
}

int skipper_hub_path_ok(const char *path)
{
	size_t len, start = 0;

	if (!path)
		return 0;
	len = strlen(path);
	if (len == 0 || len > SKIPPER_HUB_NAME_MAX || path[0] == '/')
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];
		if (c < 0x20 || c == 0x7f || c == '\\' || c == ':')
			return 0;
	}
	for (size_t i = 0; i <= len; i++) {
		if (i == len || path[i] == '/') {
			if (!component_ok(path + start, i - start))
				return 0;
			start = i + 1;
		}
	}
	return 1;
}

static int id_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

static int id_part_ok(const char *s, size_t n)
{
	if (n == 0 || n > 96 || s[0] == '.' || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (!id_char(s[i]))
			return 0;
		if (s[i] == '.' && i + 1 < n && s[i + 1] == '.')
			return 0;
	}
	return 1;
}

int skipper_hub_repo_ok(const char *repo)
{
	const char *slash;

	if (!repo)
		return 0;
	slash = strchr(repo, '/');
	if (!slash)
		return id_part_ok(repo, strlen(repo));
	if (strchr(slash + 1, '/'))
		return 0;
	return id_part_ok(repo, (size_t)(slash - repo)) && id_part_ok(slash + 1, strlen(slash + 1));
}

int skipper_hub_revision_ok(const char *rev)
{
	if (!rev || strlen(rev) > 256 || !skipper_hub_path_ok(rev))
		return 0;
	for (const char *p = rev; *p; p++)
		if (!id_char(*p) && *p != '/')
			return 0;
	return 1;
}

char *skipper_hub_url_encode(const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

int skipper_hub_parse_size(const char *s, long long *out)
{
	char *end;
	unsigned long long v, mul = 1;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	v = strtoull(s, &end, 10);
	switch (toupper((unsigned char)*end)) {
	case 'T': mul <<= 10; /* fall through */
	case 'G': mul <<= 10; /* fall through */
	case 'M': mul <<= 10; /* fall through */
	case 'K': mul <<= 10; end++; break;
	case '\0': break;
	default: return -1;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end || v > (unsigned long long)0x7fffffffffffffffLL / mul)
		return -1;
	*out = (long long)(v * mul);
	return 0;
}

int skipper_hub_profile_name_ok(const char *name)
{
	static const char *const ok_ext[] = {".ini", ".sig", ".safetensors", ".json", ".txt", ".md"};
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof ok_ext / sizeof *ok_ext; i++) {
		size_t e = strlen(ok_ext[i]);
		if (n > e && strcmp(name + n - e, ok_ext[i]) == 0)
			return 1;
	}
	return 0;
}
