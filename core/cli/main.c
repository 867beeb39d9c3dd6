#include <stdio.h>
#include <string.h>

#include "build-config.h"
#include "cli.h"

int main(int argc, char **argv)
{
	if (argc > 1 && (strcmp(argv[1], "--version") == 0)) {
		printf("skipper %s\n", PACKAGE_VERSION);
		return EXIT_OK;
	}
	fprintf(stderr, "usage: skipper COMMAND [OPTIONS]\n");
	return EXIT_USAGE;
}
