# Sourced by the skipper serve tests: TAP helpers, the model, servers on
# free ports, requests with curl, JSON read by python3.
set -u
: "${top_builddir:=.}" "${top_srcdir:=.}"
SKIPPER="$top_builddir/skipper"
MODEL="${SKIPPER_TEST_MODEL:-${XDG_CACHE_HOME:-$HOME/.cache}/skipper/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
PY="${PYTHON3:-}"
[ -n "$PY" ] || PY=$(command -v python3 || true)
HERE="$top_srcdir/tests/server"
n=0 failed=0
# generous: the suite may run under the sanitizers on a busy machine
WAIT=180

ok() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=1; fi; }
is() { n=$((n + 1)); if [ "$1" = "$2" ]; then echo "ok $n - $3"; else echo "not ok $n - $3 (got '$1', want '$2')"; failed=1; fi; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }

# Skip the whole test unless the model, curl and python3 are there.
need_basics() {
	[ -f "$MODEL" ] || skip_all "$MODEL not found (scripts/fetch-model.sh fetches it)"
	command -v curl >/dev/null 2>&1 || skip_all "curl not found"
	[ -n "$PY" ] || skip_all "python3 not found"
	"$SKIPPER" serve --help >/dev/null 2>&1 || skip_all "skipper not built"
}

T=$(mktemp -d /tmp/skipper-serve-XXXXXX)
SERVERS=""
cleanup() {
	for p in $SERVERS; do kill -KILL "$p" 2>/dev/null; done
	[ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null
	if [ "$failed" = 0 ]; then rm -rf "$T"; else echo "# kept $T"; fi
}
trap cleanup EXIT
export SKIPPER_SYSTEM_CONFIG=/nonexistent SKIPPER_CACHE_DIR="$T/cache"

# start_server NAME [skipper serve options]: a server on a free port,
# started and ready; sets PID and PORT (and NAME's files in $T: NAME.err
# is its standard error).
start_server() {
	name=$1
	shift
	"$SKIPPER" serve --port 0 -m "$MODEL" -t 2 "$@" >"$T/$name.out" 2>"$T/$name.err" &
	PID=$!
	SERVERS="$SERVERS $PID"
	PORT=
	i=0
	while [ $i -lt $((WAIT * 10)) ]; do
		PORT=$(sed -n 's/^skipper serve: listening on http:.*:\([0-9][0-9]*\)$/\1/p' "$T/$name.err")
		[ -n "$PORT" ] && grep -q "^skipper serve: ready" "$T/$name.err" && break
		kill -0 $PID 2>/dev/null || break
		sleep 0.1
		i=$((i + 1))
	done
	if ! grep -q "^skipper serve: ready" "$T/$name.err"; then
		sed 's/^/# /' "$T/$name.err"
		echo "Bail out! skipper serve $name did not start"
		exit 1
	fi
}

# stop_server PID [SIGNAL]: signal it (TERM), wait for it; its exit
# status in STATUS.
stop_server() {
	kill -"${2:-TERM}" "$1"
	wait "$1"
	STATUS=$?
}

# req OUT [curl options] URL: the body into OUT, the status printed.
req() {
	out=$1
	shift
	curl -s --max-time $WAIT -o "$out" -w '%{http_code}' "$@"
}

# jget FILE EXPR: EXPR (Python, over the JSON in FILE as d) printed.
jget() {
	"$PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null
}

# metric URL NAME: the value of one sample of /metrics (NAME with labels as printed).
metric() {
	curl -s --max-time $WAIT "$1/metrics" | awk -v k="$2" '$1 == k { print $2 }'
}

# poll SECONDS COMMAND...: run COMMAND every 0.2 s until it succeeds.
poll() {
	limit=$(($1 * 5))
	shift
	i=0
	while [ $i -lt $limit ]; do
		"$@" && return 0
		sleep 0.2
		i=$((i + 1))
	done
	return 1
}
