/* plugins/common/keys: a key table parses every type into its member with
 * the host's messages, sets the defaults, frees its strings, and makes the
 * help text skipper policies shows (column, defaults, continuation lines,
 * the length it needs). */
#include <stddef.h>
#include <string.h>

#include "common/keys/keys.h"
#include "mock-host.h"
#include "tap.h"

struct st {
	int n, m, flag, pick;
	double x;
	char *name, *layers;
};

#define DEV_DEFAULT 7

static int no_spaces(const struct skipper_host *h, void *ctx, const char *value)
{
	if (strchr(value, ' ')) {
		h->set_error(ctx, "no spaces, please");
		return SKIPPER_POLICY_ERROR;
	}
	return SKIPPER_POLICY_OK;
}

static const struct key_spec table[] = {
	{ "n", KEY_INT, offsetof(struct st, n), 4, 1, 32, "K", "an integer" },
	{ "x", KEY_DOUBLE, offsetof(struct st, x), 0.45, 0, 1, "R", "a share;\nwrapped onto a second line" },
	{ "flag", KEY_BOOL, offsetof(struct st, flag), 1, .help = "a switch" },
	{ "pick", KEY_CHOICE, offsetof(struct st, pick), 1, .value = "red|green|blue", .help = "a colour" },
	{ "name", KEY_STRING, offsetof(struct st, name), .value = "S", .help = "a name", .dflt_text = "[policy] name",
	  .check = no_spaces },
	{ "layers", KEY_LAYERS, offsetof(struct st, layers), .help = "a layer list" },
	{ "a_rather_long_key_name", KEY_INT, offsetof(struct st, m), 0, 0, 9, "N", "overflows the column",
	  KEY_TEXT(DEV_DEFAULT) },
	{ NULL },
};

static const struct key_spec second[] = {
	{ "other", KEY_BOOL, offsetof(struct st, flag), 0, .help = "from a second table" },
	{ NULL },
};

int main(void)
{
	struct mock_host m;
	struct st s = { 0 };
	const struct skipper_host *h = &m.host;
	char help[1024], tiny[16];
	size_t need;

	mock_host_init(&m, 4, 8, 100);
	keys_defaults(table, &s);
	ok(s.n == 4 && s.x == 0.45 && s.flag == 1 && s.pick == 1 && !s.name && !s.layers,
	   "defaults set; strings stay NULL (not given)");

	ok(keys_config(table, &s, h, &m, "n", "12") == 0 && s.n == 12, "int");
	ok(keys_config(table, &s, h, &m, "n", "33") < 0 && mock_has(m.error, "[1, 32]") && s.n == 12,
	   "int out of range: the host's message, the value unchanged");
	ok(keys_config(table, &s, h, &m, "x", "0.5") == 0 && s.x == 0.5, "double");
	ok(keys_config(table, &s, h, &m, "flag", "false") == 0 && s.flag == 0, "bool");
	ok(keys_config(table, &s, h, &m, "pick", "blue") == 0 && s.pick == 2, "choice: its index");
	ok(keys_config(table, &s, h, &m, "pick", "pink") < 0 && mock_has(m.error, "expected one of red, green, blue, got 'pink'"),
	   "choice: a value not among them");
	ok(keys_config(table, &s, h, &m, "name", "a b") < 0 && mock_has(m.error, "no spaces") && !s.name,
	   "string: the table's check refuses");
	ok(keys_config(table, &s, h, &m, "name", "one") == 0 && keys_config(table, &s, h, &m, "name", "two") == 0 &&
	       !strcmp(s.name, "two"),
	   "string: an owned copy, the last one given kept");
	ok(keys_config(table, &s, h, &m, "layers", "1,3") == 0 && !strcmp(s.layers, "1,3"), "layer list");
	ok(keys_config(table, &s, h, &m, "layers", "1,9") < 0 && !strcmp(s.layers, "1,3"),
	   "layer list past the model: refused at once");
	ok(keys_config(table, &s, h, &m, "bogus", "1") == SKIPPER_POLICY_UNKNOWN_KEY, "unknown key");
	keys_free(table, &s);
	ok(!s.name && !s.layers, "strings freed and cleared");

	need = keys_help(help, sizeof help, (const struct key_spec *const[]){ table, second, NULL });
	ok(need == strlen(help), "help: the length it needed (%zu)", need);
	ok(mock_has(help, "n = K                an integer (default 4)\n"), "int: column 21, its default");
	ok(mock_has(help, "x = R                a share;\n                     wrapped onto a second line (default 0.45)\n"),
	   "a help that goes on: the next line at the column, the default at the end");
	ok(mock_has(help, "flag = BOOL          a switch (default true)\n"), "bool");
	ok(mock_has(help, "pick = red|green|blue  a colour (default green)\n"), "choice: its values; past the column two spaces");
	ok(mock_has(help, "name = S             a name (default [policy] name)\n"), "a default the member does not hold");
	ok(mock_has(help, "layers = LAYERS      a layer list\n"), "a string without a default shows none");
	ok(mock_has(help, "a_rather_long_key_name = N  overflows the column (default 7)\n"), "KEY_TEXT of a macro");
	ok(mock_has(help, "other = BOOL         from a second table (default false)\n"), "tables in order");
	ok(keys_help(tiny, sizeof tiny, (const struct key_spec *const[]){ table, NULL }) == strlen(help) - strlen(
	       "other = BOOL         from a second table (default false)\n") && strlen(tiny) == sizeof tiny - 1,
	   "a small buffer: cut and terminated, the full length returned");
	return tap_done();
}
