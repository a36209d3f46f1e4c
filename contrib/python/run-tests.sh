#!/bin/sh
# run-tests.sh BUILD_DIR - runs the Python binding's tests against a build.
#
# BUILD_DIR is a configured and built hcg tree (at least `make -C runtime`):
# the tests load BUILD_DIR/runtime/.libs/libhcg.so.1 and compare with the
# BUILD_DIR/runtime/hcg command of the same build.
#
# Interpreters: $PYTHON when set; otherwise `python3` from PATH and, when it
# is a different interpreter, the system /usr/bin/python3 too (the binding
# must work with both). Prints "SKIP: no python3" and exits 0 without one.
# Exits non-zero when any test fails.
set -eu

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
if [ ! -d "$1" ]; then
    echo "$0: $1 is not a directory" >&2
    exit 2
fi
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)

lib=$build/runtime/.libs/libhcg.so.1
cli=$build/runtime/hcg
for f in "$lib" "$cli"; do
    if [ ! -e "$f" ]; then
        echo "$0: $f is missing: build first (make -C $build/runtime)" >&2
        exit 1
    fi
done

if [ -n "${PYTHON:-}" ]; then
    pythons=$PYTHON
else
    pythons=
    if command -v python3 >/dev/null 2>&1; then
        pythons=$(command -v python3)
    fi
    if [ -x /usr/bin/python3 ]; then
        # The same interpreter twice (PATH's python3 is the system one)
        # would only double the time.
        same=$( [ -n "$pythons" ] && "$pythons" -c 'import sys; print(sys.executable)' 2>/dev/null || true)
        if [ -z "$pythons" ]; then
            pythons=/usr/bin/python3
        elif [ "$(readlink -f "$same")" != "$(readlink -f /usr/bin/python3)" ]; then
            pythons="$pythons /usr/bin/python3"
        fi
    fi
fi
if [ -z "$pythons" ]; then
    echo "SKIP: no python3"
    exit 0
fi

# Debian's python3-torch (scripts/deps.sh) is there for /usr/bin/python3:
# its torch tests must run, not skip.
req() {
    if [ "$(readlink -f "$1")" = "$(readlink -f /usr/bin/python3)" ]; then
        echo 1
    else
        echo 0
    fi
}

status=0
for py in $pythons; do
    echo "== $py ($("$py" -c 'import sys; print(sys.version.split()[0])'))"
    # The slowest tests, where unittest can say (3.12 and later): what CI's
    # time goes to.
    slowest=
    if "$py" -m unittest --help 2>/dev/null | grep -q -- --durations; then
        slowest="--durations 8"
    fi
    # -B: no __pycache__ in the source tree.
    # shellcheck disable=SC2086 # $slowest is two words or none
    if ! (cd "$here" &&
          HCG_LIBRARY=$lib HCG_CLI=$cli PYTHONPATH=$here${PYTHONPATH:+:$PYTHONPATH} \
          HCGTEST_REQUIRE_TORCH=$(req "$py") \
              "$py" -B -m unittest discover -v $slowest -s tests 2>&1); then
        status=1
    fi
done
exit $status
