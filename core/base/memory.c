/* Memory left to this process, from /proc/meminfo and the cgroup v2
 * files of its own group: containers (CI, a server's deployment) limit a
 * process far below the machine's free memory. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "memory.h"

/* The first number in a file, or -1 ("max", absent). */
static int read_u64(const char *path, const char *key, uint64_t *v)
{
	FILE *f = fopen(path, "r");
	char line[256];
	int rc = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		const char *p = line;
		if (key) {
			if (strncmp(line, key, strlen(key)))
				continue;
			p += strlen(key);
		}
		if (sscanf(p, "%" SCNu64, v) == 1)
			rc = 0;
		break;
	}
	fclose(f);
	return rc;
}

/* The process's cgroup v2 directory (a "0::/path" line). */
static int cgroup_dir(char *buf, size_t n)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	char line[512];
	int rc = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = 0;
			rc = snprintf(buf, n, "/sys/fs/cgroup%s", strcmp(line + 3, "/") ? line + 3 : "") < (int)n ? 0 : -1;
			break;
		}
	fclose(f);
	return rc;
}

int skipper_memory_available(uint64_t *bytes)
{
	uint64_t kib, max, cur;
	char dir[400], path[512];
	int rc = -1;

	if (read_u64("/proc/meminfo", "MemAvailable:", &kib) == 0) {
		*bytes = kib * 1024;
		rc = 0;
	}
	if (cgroup_dir(dir, sizeof dir) == 0) {
		snprintf(path, sizeof path, "%s/memory.max", dir);
		if (read_u64(path, NULL, &max) == 0) {
			uint64_t file = 0;
			snprintf(path, sizeof path, "%s/memory.stat", dir);
			read_u64(path, "file ", &file);
			snprintf(path, sizeof path, "%s/memory.current", dir);
			if (read_u64(path, NULL, &cur) == 0) {
				/* the group's page cache gives way to what it allocates */
				cur = cur > file ? cur - file : 0;
				uint64_t left = max > cur ? max - cur : 0;
				if (rc || left < *bytes)
					*bytes = left;
				rc = 0;
			}
		}
	}
	return rc;
}
