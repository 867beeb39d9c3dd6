/* How much memory this process may still take. */
#ifndef SKIPPER_BASE_MEMORY_H
#define SKIPPER_BASE_MEMORY_H

#include <stdint.h>

/* Bytes that can be allocated without swapping or an out-of-memory kill:
 * the kernel's MemAvailable, less where a cgroup (v2) limit leaves less
 * (its usage counted without its page cache, which gives way).
 * 0 with *bytes set; -1 where neither can be read (not Linux). */
int skipper_memory_available(uint64_t *bytes);

#endif
