/* skipper bench output: Markdown table and gnuplot chart. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* decode speed, as in skipper_run_stats: tokens after the first / decode time */
static double tps(const struct bench_cell *c) { return c->seconds > 0 ? c->n_decoded / c->seconds : 0; }

static const struct bench_cell *cell(const struct bench_report *r, int p, int c)
{
	return &r->cells[p * (r->n_categories + 1) + c];
}

void bench_write_markdown(const struct bench_report *r, FILE *f)
{
	fprintf(f, "| category | policy | prompts | tokens | tokens/s | speedup | M | alpha | draft %% | verify %% | policy %% | mismatches |\n");
	fprintf(f, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	for (int c = 0; c <= r->n_categories; c++) {
		const char *name = c < r->n_categories ? r->categories[c] : "**all**";
		for (int p = 0; p < r->n_policies; p++) {
			const struct bench_cell *x = cell(r, p, c);
			double t = tps(x), base = r->baseline >= 0 ? tps(cell(r, r->baseline, c)) : 0;
			double m = x->rounds ? (double)(x->n_generated - x->n_prompts) / x->rounds : 0;
			double alpha = x->drafted ? (double)x->accepted / x->drafted : 0;
			double tot = x->seconds > 0 ? x->seconds : 1;
			char speed[32] = "n/a";
			if (base > 0)
				snprintf(speed, sizeof speed, "%.3fx", t / base);
			fprintf(f, "| %s | %s | %d | %d | %.2f | %s | %.2f | %.3f | %.1f | %.1f | %.1f | %d |\n", name,
			        r->policies[p], x->n_prompts, x->n_generated, t, speed, m, alpha, 100 * x->draft / tot,
			        100 * x->verify / tot, 100 * x->policy / tot, x->mismatches);
		}
	}
}

int bench_write_chart(const struct bench_report *r, const char *svg_path)
{
	char dat[] = "/tmp/skipper-bench-XXXXXX";
	int fd = mkstemp(dat);
	FILE *f, *gp;
	int rc;

	if (r->baseline < 0 || fd < 0 || system("command -v gnuplot >/dev/null 2>&1") != 0) {
		if (fd >= 0) {
			close(fd);
			unlink(dat);
		}
		return -1;
	}
	f = fdopen(fd, "w");
	fprintf(f, "category");
	for (int p = 0; p < r->n_policies; p++)
		fprintf(f, "\t\"%s\"", r->policies[p]);
	fprintf(f, "\n");
	for (int c = 0; c <= r->n_categories; c++) {
		fprintf(f, "\"%s\"", c < r->n_categories ? r->categories[c] : "all");
		for (int p = 0; p < r->n_policies; p++) {
			double base = tps(cell(r, r->baseline, c));
			fprintf(f, "\t%.4f", base > 0 ? tps(cell(r, p, c)) / base : 0);
		}
		fprintf(f, "\n");
	}
	fclose(f);
	gp = popen("gnuplot", "w");
	if (!gp) {
		unlink(dat);
		return -1;
	}
	fprintf(gp,
	        "set terminal svg size 1000,500 dynamic\nset output '%s'\n"
	        "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
	        "set ylabel 'speedup vs none'\nset key outside right\nset xtics rotate by -30\nset grid ytics\n"
	        "set yrange [0:*]\nplot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i)\n",
	        svg_path, r->n_policies + 1, dat);
	rc = pclose(gp);
	unlink(dat);
	return rc == 0 ? 0 : -1;
}
