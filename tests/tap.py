"""TAP for the Python tests: ok() numbers each check and says what failed,
skip() counts a check that cannot run here, done() prints the plan and
exits 1 if anything failed. Import it from a script in tests/ (its own
directory is on sys.path)."""
import sys

n = failed = 0


def ok(cond, what, detail=""):
    global n, failed
    n += 1
    print(f"{'' if cond else 'not '}ok {n} - {what}", flush=True)
    if not cond:
        failed += 1
        if detail:
            print("# " + str(detail).replace("\n", "\n# "))
    return cond


def skip(why):
    global n
    n += 1
    print(f"ok {n} # SKIP {why}", flush=True)


def done():
    print(f"1..{n}")
    sys.exit(1 if failed else 0)
