/* Skip profiles and layer lists: parse/format, errors, round trip, checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/profile.h"
#include "policy/tensor_file.h"
#include "tap.h"

static char dir[64];

static int has(const char *hay, const char *needle)
{
	int r = hay && strstr(hay, needle) != NULL;
	if (!r)
		diag("'%s' not in: %s", needle, hay ? hay : "(null)");
	return r;
}

static const char *fmt(const uint8_t *mask, int n)
{
	static char buf[256];
	skipper_layers_format(mask, n, buf, sizeof buf);
	return buf;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		exit(99);
	fputs(text, f);
	fclose(f);
}

static const char *SHA = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/* Write text as a profile and read it; returns the status, message in err. */
static int read_text(const char *text, struct skipper_profile **p, struct skipper_error *err, char *path)
{
	static int k;
	sprintf(path, "%s/p%d.ini", dir, k++);
	write_file(path, text);
	return skipper_profile_read(path, p, err);
}

/* What a careless or hostile profile (from a hub) holds: each refused with
 * what is wrong, the number as written, the line. */
static void bounded(char *path)
{
	struct skipper_profile *p = NULL;
	struct skipper_error err = { 0 };
	char text[512], want[256];
	uint8_t m[30];
	int rc;

	snprintf(text, sizeof text, "[profile]\nn_layers = 30\nmodel_sha256 = %s\n[mask]\nattn = 12345678901234567890\n",
	         SHA);
	rc = read_text(text, &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":5: [mask] attn: layer 12345678901234567890 out of range: the model "
	                                            "has 30 layers (0-29)"),
	   "a 20-digit layer is named as written (was 'layer 1000000'): %s", err.msg);
	ok(skipper_layers_parse("3-99999999999999999999999999999", m, 30, &err) == SKIPPER_ERR_RANGE &&
	       has(err.msg, "layer 999999999999999999999999... out of range"),
	   "the end of a range too, cut after 24 digits: %s", err.msg);

	/* a line of 400 KB: "expected 'key = value'" said nothing of its length */
	sprintf(path, "%s/longline.ini", dir);
	FILE *f = fopen(path, "w");
	fprintf(f, "[profile]\nn_layers = 30\n");
	for (int i = 0; i < 400000; i++)
		fputc('x', f);
	fputc('\n', f);
	fclose(f);
	rc = skipper_profile_read(path, &p, &err);
	sprintf(want, "%s:3: line longer than 65535 bytes", path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, want), "a 400 KB line: %s", err.msg);

	sprintf(path, "%s/nul.ini", dir);
	f = fopen(path, "w");
	fwrite("[profile]\nn_layers = 3\0\n", 1, 25, f);
	fclose(f);
	rc = skipper_profile_read(path, &p, &err);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":2: NUL byte in a text file"), "a NUL byte names its line");

	snprintf(text, sizeof text, "[profile]\nn_layers = 30\nmodel_sha256 = %s\nmethod = ../../x/evil\n", SHA);
	rc = read_text(text, &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":4: [profile] method: '../../x/evil' is not a policy name"),
	   "a method that is a path (profiles come from hubs): %s", err.msg);
	snprintf(text, sizeof text, "[profile]\nn_layers = 30\nmodel_sha256 = %s\nmethod = bo-static\n", SHA);
	rc = read_text(text, &p, &err, path);
	ok(rc == 0, "a method that is a policy name is fine");
	skipper_profile_free(p);
	p = NULL;
	snprintf(text, sizeof text, "[profile]\nn_layers = 30\nmodel_sha256 = %s\n[latency.cpu]\nc1 = 0x10\n", SHA);
	rc = read_text(text, &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":5: [latency.cpu] c1: expected a number, got '0x10'"),
	   "a hex latency coefficient");
	snprintf(text, sizeof text, "[profile]\nn_layers = 0x1e\nmodel_sha256 = %s\n", SHA);
	rc = read_text(text, &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":2: [profile] n_layers: expected 1..4096, got '0x1e'"),
	   "a hex layer count");
}

int main(void)
{
	uint8_t m[32];
	struct skipper_error err = { 0 };
	struct skipper_profile *p, *q;
	char path[128], path2[128], want[256];
	int rc;

	strcpy(dir, "/tmp/t-profile.XXXXXX");
	if (!mkdtemp(dir))
		return 99;

	/* --- layer lists --- */
	rc = skipper_layers_parse("3,5,7-12", m, 30, &err);
	ok(rc == 0 && m[3] && !m[4] && m[5] && m[7] && m[12] && !m[13] && !m[0], "parse 3,5,7-12");
	is_str(fmt(m, 30), "3,5,7-12", "format is canonical");
	rc = skipper_layers_parse(" 12 - 14 , 1,2 ,3, 13 ", m, 30, &err);
	is_str(rc == 0 ? fmt(m, 30) : "", "1-3,12-14", "blanks, overlaps and runs merge");
	rc = skipper_layers_parse("", m, 30, &err);
	is_str(rc == 0 ? fmt(m, 30) : "x", "", "empty list");
	rc = skipper_layers_parse("none", m, 30, &err);
	is_str(rc == 0 ? fmt(m, 30) : "x", "", "'none' is empty");
	rc = skipper_layers_parse("0-29", m, 30, &err);
	is_str(rc == 0 ? fmt(m, 30) : "", "0-29", "whole model");
	rc = skipper_layers_parse("3,x", m, 30, &err);
	ok(rc == SKIPPER_ERR_ARG && has(err.msg, "'x' is not a layer or range"), "syntax error names the item");
	memset(m, 0, sizeof m);
	m[0] = 1;
	rc = skipper_layers_parse("1,2,3,50", m, 30, &err);
	ok(rc == SKIPPER_ERR_RANGE && m[0] == 1 && m[1] == 0, "a bad list leaves the mask untouched");
	rc = skipper_layers_parse("3,,4", m, 30, &err);
	ok(rc == SKIPPER_ERR_ARG, "empty item refused");
	rc = skipper_layers_parse("9-3", m, 30, &err);
	ok(rc == SKIPPER_ERR_ARG && has(err.msg, "9-3 is reversed"), "reversed range refused");
	rc = skipper_layers_parse("-3", m, 30, &err);
	ok(rc == SKIPPER_ERR_ARG, "negative refused");
	rc = skipper_layers_parse("3,", m, 30, &err);
	ok(rc == SKIPPER_ERR_ARG, "trailing comma refused");
	rc = skipper_layers_parse("28-30", m, 30, &err);
	ok(rc == SKIPPER_ERR_RANGE && has(err.msg, "layer 30 out of range: the model has 30 layers (0-29)"),
	   "range checked against n_layer");
	rc = skipper_layers_parse("99999999999999", NULL, 0, &err);
	ok(rc == SKIPPER_ERR_RANGE, "huge number refused without a model");
	rc = skipper_layers_parse("40-50", NULL, 0, &err);
	ok(rc == 0, "without a model only syntax is checked");
	{
		char small[4];
		uint8_t all[30];
		memset(all, 1, sizeof all);
		all[5] = 0;
		int need = skipper_layers_format(all, 30, small, sizeof small);
		ok(need == (int)strlen("0-4,6-29") && strlen(small) < sizeof small, "format: snprintf-like truncation");
	}

	/* --- profile round trip --- */
	rc = skipper_profile_new(&p, &err);
	ok(rc == 0, "new profile");
	memset(m, 0, sizeof m);
	m[3] = m[5] = m[7] = m[8] = m[9] = 1;
	rc = skipper_profile_set(p, "profile", "model", "SmolLM2-135M", &err) ||
	     skipper_profile_set(p, "profile", "model_sha256", SHA, &err) ||
	     skipper_profile_set(p, "profile", "method", "fixed", &err) ||
	     skipper_profile_set(p, "profile", "n_layers", "30", &err) ||
	     skipper_profile_set_mask(p, "mask", "attn", m, 30, &err) ||
	     skipper_profile_set(p, "mask", "mlp", "", &err) ||
	     skipper_profile_set_mask(p, "domain.code", "attn", m, 30, &err) ||
	     skipper_profile_set(p, "latency.cpu", "c1", "1.5e-4", &err);
	ok(rc == 0, "set values");
	rc = skipper_profile_set(p, "mask", "attn", "1 ; comment", &err);
	ok(rc == SKIPPER_ERR_ARG, "a value that would not survive INI is refused");
	rc = skipper_profile_set(p, "ma]sk", "attn", "1", &err);
	ok(rc == SKIPPER_ERR_ARG, "a bad section name is refused");
	sprintf(path, "%s/out.ini", dir);
	rc = skipper_profile_write(p, path, &err);
	ok(rc == 0, "write");
	skipper_profile_free(p);
	rc = skipper_profile_read(path, &q, &err);
	ok(rc == 0, "read back");
	if (rc == 0) {
		uint8_t got[30];
		is_str(skipper_profile_get(q, "profile", "model"), "SmolLM2-135M", "model name survives");
		is_str(skipper_profile_get(q, "mask", "attn"), "3,5,7-9", "mask stored canonically");
		ok(skipper_profile_get_mask(q, "domain.code", "attn", got, 30, &err) == 0 && got[7] && !got[6],
		   "domain mask read");
		ok(skipper_profile_get_mask(q, "mask", "mlp", got, 30, &err) == 0 && !got[0], "empty mask read");
		ok(skipper_profile_get_mask(q, "mask", "nope", got, 30, &err) == SKIPPER_ERR_NOT_FOUND, "absent key");
		ok(skipper_profile_get_mask(q, "mask", "attn", got, 12, &err) == SKIPPER_ERR_MISMATCH,
		   "a mask of another size is refused, never overrun");
		is_int(skipper_profile_n_layers(q), 30, "n_layers");
		is_str(skipper_profile_section(q, 0), "profile", "sections in order (0)");
		is_str(skipper_profile_section(q, 3), "latency.cpu", "sections in order (3)");
		ok(skipper_profile_section(q, 4) == NULL, "no fifth section");
		ok(skipper_profile_validate(q, SHA, 30, &err) == 0, "validates against the right model");
		rc = skipper_profile_validate(q, "ffff456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 30, &err);
		ok(rc == SKIPPER_ERR_MISMATCH && has(err.msg, path) && has(err.msg, SHA) && has(err.msg, "ffff4567"),
		   "hash mismatch names the file and both hashes");
		rc = skipper_profile_validate(q, SHA, 24, &err);
		ok(rc == SKIPPER_ERR_MISMATCH && has(err.msg, "30-layer") && has(err.msg, "24 layers"),
		   "layer count mismatch");
		/* write over an existing file, then nothing temporary is left */
		rc = skipper_profile_write(q, path, &err);
		ok(rc == 0, "overwrite");
		skipper_profile_free(q);
	} else {
		diag("%s", err.msg);
	}
	sprintf(want, "ls %s | grep -c tmp >/dev/null", dir);
	ok(system(want) != 0, "no temporary file left behind");
	sprintf(path2, "%s/nodir/x.ini", dir);
	rc = skipper_profile_new(&p, &err);
	rc = skipper_profile_write(p, path2, &err);
	ok(rc == SKIPPER_ERR_IO && has(err.msg, path2), "write into a missing directory fails clearly");
	skipper_profile_free(p);

	/* --- bad files --- */
	rc = skipper_profile_read("/nonexistent/p.ini", &p, &err);
	ok(rc == SKIPPER_ERR_NOT_FOUND && has(err.msg, "/nonexistent/p.ini"), "missing file");
	rc = read_text("[mask]\nattn = 1\n", &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, "no [profile] n_layers"), "no [profile] header");
	sprintf(want, "[profile]\nn_layers = 30\nmodel_sha256 = %s\n[mask]\nattn = 1,40\n", SHA);
	rc = read_text(want, &p, &err, path);
	sprintf(want, "%s:5: [mask] attn: layer 40 out of range", path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, want), "mask out of range: file:line, section, key");
	sprintf(want, "[profile]\nn_layers = 30\nmodel_sha256 = %s\n[mask]\nattn = 1\nattn = 2\n", SHA);
	rc = read_text(want, &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":6: [mask] attn: duplicate key (first set on line 5)"),
	   "duplicate key");
	rc = read_text("[profile]\nn_layers = thirty\n", &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":2: [profile] n_layers"), "bad n_layers");
	rc = read_text("[profile]\nn_layers = 30\n", &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, "model_sha256 missing"), "no model hash");
	rc = read_text("[profile]\nn_layers = 30\nmodel_sha256 = abc\n", &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, "64 hex digits"), "short model hash");
	sprintf(want, "[profile]\nn_layers = 30\nmodel_sha256 = %s\n[latency.cpu]\nc1 = fast\n", SHA);
	rc = read_text(want, &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":5: [latency.cpu] c1: expected a number"), "bad latency value");
	rc = read_text("[profile\nn_layers = 30\n", &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":1: section header without ']'"), "syntax error with line");
	rc = read_text("[profile]\nn_layers 30\n", &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":2: expected 'key = value'"), "line without '='");
	rc = read_text("[profile]\n[mask]\n[profile]\n", &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, ":3: duplicate section [profile]"), "duplicate section");
	{
		/* comments, BOM, indentation, ':' separator; values keep inner blanks */
		char text[512];
		snprintf(text, sizeof text,
		         "\xef\xbb\xbf; a profile\n# written by hand\n[profile]  ; header\n  n_layers : 30\n"
		         "model_sha256 = %s\nmodel = Tiny Model v2 ; trailing\n\n[mask]\nattn = 1,2;3\n",
		         SHA);
		rc = read_text(text, &p, &err, path);
		ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, "'1,2;3'"), "';' without a blank is not a comment");
		snprintf(text, sizeof text,
		         "\xef\xbb\xbf; a profile\n# written by hand\n[profile]  ; header\n  n_layers : 30\n"
		         "model_sha256 = %s\nmodel = Tiny Model v2 ; trailing\n\n[mask]\nattn = 1,2 ;3\n",
		         SHA);
		rc = read_text(text, &p, &err, path);
		ok(rc == 0, "comments, BOM, indentation and ':' accepted");
		if (rc == 0) {
			is_str(skipper_profile_get(p, "profile", "model"), "Tiny Model v2", "inline comment cut, inner blanks kept");
			is_str(skipper_profile_get(p, "mask", "attn"), "1,2", "inline comment after a value");
			skipper_profile_free(p);
		}
	}
	{
		/* a deep model's alternating mask is a long line: it must round-trip */
		uint8_t big[160], back[160];
		char n[8];
		for (int l = 0; l < 160; l++)
			big[l] = !(l & 1);
		rc = skipper_profile_new(&p, &err) || skipper_profile_set(p, "profile", "n_layers", "160", &err) ||
		     skipper_profile_set(p, "profile", "model_sha256", SHA, &err) ||
		     skipper_profile_set_mask(p, "mask", "attn", big, 160, &err);
		sprintf(path, "%s/long.ini", dir);
		ok(rc == 0 && skipper_profile_write(p, path, &err) == 0, "long mask written");
		skipper_profile_free(p);
		rc = skipper_profile_read(path, &p, &err);
		ok(rc == 0 && strlen(skipper_profile_get(p, "mask", "attn")) > 250, "long line read back");
		if (rc == 0) {
			ok(skipper_profile_get_mask(p, "mask", "attn", back, 160, &err) == 0 && memcmp(big, back, 160) == 0,
			   "long mask identical");
			skipper_profile_free(p);
		}
		(void)n;
	}
	rc = read_text("n_layers = 30\n", &p, &err, path);
	ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, "outside of any [section]"), "key outside a section");
	bounded(path);

	/* --- tensors (knn-router anchors) --- */
	{
		float a[6] = { 1, 2, 3, 4, 5, 6 }, b[3] = { -1, 0.5f, 7 }, got[8];
		const char *names[2] = { "anchors", "centroid" };
		const float *data[2] = { a, b };
		int rows[2] = { 2, 1 }, cols[2] = { 3, 3 }, r, c;
		sprintf(path, "%s/anchors.safetensors", dir);
		rc = skipper_tensors_write(path, 2, names, data, rows, cols, &err);
		ok(rc == 0, "tensors written");
		rc = skipper_tensor_read(path, "anchors", NULL, 0, &r, &c, &err);
		ok(rc == 0 && r == 2 && c == 3, "shape query");
		rc = skipper_tensor_read(path, "anchors", got, 8, &r, &c, &err);
		ok(rc == 0 && memcmp(got, a, sizeof a) == 0, "anchors read back");
		rc = skipper_tensor_read(path, "centroid", got, 8, &r, &c, &err);
		ok(rc == 0 && r == 1 && memcmp(got, b, sizeof b) == 0, "second tensor read back");
		rc = skipper_tensor_read(path, "centroid", got, 2, &r, &c, &err);
		ok(rc == SKIPPER_ERR_RANGE, "small buffer refused");
		rc = skipper_tensor_read(path, "labels", got, 8, &r, &c, &err);
		ok(rc == SKIPPER_ERR_NOT_FOUND && has(err.msg, "no tensor 'labels'"), "absent tensor");
		rc = skipper_tensors_write(path, 2, (const char *const[]){ "x", "x" }, data, rows, cols, &err);
		ok(rc == SKIPPER_ERR_ARG, "repeated name refused");
		/* truncate the data: shape and offsets no longer fit */
		if (truncate(path, 8 + 16) == 0) {
			rc = skipper_tensor_read(path, "anchors", got, 8, &r, &c, &err);
			ok(rc == SKIPPER_ERR_FORMAT, "truncated file refused: %s", err.msg);
		} else {
			ok(0, "truncate");
		}
		write_file(path, "not a tensor file");
		rc = skipper_tensor_read(path, "anchors", got, 8, &r, &c, &err);
		ok(rc == SKIPPER_ERR_FORMAT, "garbage refused");

		/* a NaN among the values: every cosine with it would be NaN */
		float bad[6] = { 1, 2, 3, 4, NAN, 6 };
		const float *bdata[2] = { bad, b };
		rc = skipper_tensors_write(path, 2, names, bdata, rows, cols, &err);
		rc = rc ? rc : skipper_tensor_read(path, "anchors", got, 8, &r, &c, &err);
		ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, "row 1 holds nan"), "a NaN refused: %s", err.msg);
		/* two tensors over the same bytes: the header, rewritten by hand */
		{
			const char *hdr = "{\"anchors\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},"
			                  "\"labels\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[4,8]}}";
			unsigned char buf[256] = { 0 };
			size_t hl = strlen(hdr);
			FILE *f = fopen(path, "wb");
			buf[0] = (unsigned char)hl;
			memcpy(buf + 8, hdr, hl);
			fwrite(buf, 1, 8 + hl + 8, f);
			fclose(f);
			rc = skipper_tensor_read(path, "labels", got, 8, &r, &c, &err);
			ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, "overlap"), "overlapping tensors refused: %s", err.msg);
		}
		/* a FIFO is refused, not waited on (no writer ever comes) */
		sprintf(path, "%s/fifo", dir);
		if (mkfifo(path, 0600) == 0) {
			rc = skipper_tensor_read(path, "anchors", got, 8, &r, &c, &err);
			ok(rc && has(err.msg, "not a regular file"), "FIFO tensor file refused: %s", err.msg);
			rc = skipper_profile_read(path, &p, &err);
			ok(rc && has(err.msg, "not a regular file"), "FIFO profile refused: %s", err.msg);
		} else {
			tap_skip(2, "mkfifo refused here");
		}
		/* a profile larger than any valid one is not read into memory */
		sprintf(path, "%s/huge.ini", dir);
		if (truncate(path, 0) != 0)
			write_file(path, "");
		rc = truncate(path, (off_t)1 << 30);
		rc = rc ? rc : skipper_profile_read(path, &p, &err);
		ok(rc == SKIPPER_ERR_FORMAT && has(err.msg, "more than any valid one"), "a 1 GiB profile refused: %s",
		   err.msg);
	}

	sprintf(want, "rm -rf %s", dir);
	if (system(want) != 0)
		diag("cleanup failed");
	return tap_done();
}
