/* Runs a libFuzzer entry point over seed files without libFuzzer, so every
 * `make check` replays the corpus (also under --enable-sanitizers): each
 * file whole and cut at a few points. Each argument is a file or a
 * directory of files; with none, FUZZ_SEED_DIR. Prints TAP. `make fuzz`
 * links the same target with libFuzzer instead (tests/fuzz/README). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int n, failed;

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f) {
		printf("not ok %d - %s: cannot open\n", ++n, path);
		failed++;
		return;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	/* An exact-size heap copy lets ASan catch reads past the end. */
	buf = malloc(len ? (size_t)len : 1);
	if (fread(buf, 1, (size_t)len, f) != (size_t)len)
		len = 0;
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	/* Also every prefix cut at a few points: truncated input is the classic bug. */
	for (long cut = 1; cut < len; cut += len / 7 + 1)
		LLVMFuzzerTestOneInput(buf, (size_t)cut);
	free(buf);
	printf("ok %d - %s\n", ++n, path);
}

int main(int argc, char **argv)
{
#ifdef FUZZ_SEED_DIR
	/* `make check` runs the target with no arguments: replay its seeds. */
	static char *defaults[] = {NULL, FUZZ_SEED_DIR};
	if (argc == 1) {
		argc = 2;
		argv = defaults;
	}
#endif
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			struct dirent **names;
			int k = scandir(argv[i], &names, NULL, alphasort);
			for (int j = 0; j < k; j++) {
				if (names[j]->d_name[0] != '.') {
					char path[4096];
					snprintf(path, sizeof path, "%s/%s", argv[i], names[j]->d_name);
					run_file(path);
				}
				free(names[j]);
			}
			free(names);
		} else {
			run_file(argv[i]);
		}
	}
	if (!n) {
		printf("not ok 1 - no seed files\n");
		n = failed = 1;
	}
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
