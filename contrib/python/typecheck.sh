#!/bin/sh
# typecheck.sh - mypy --strict on the binding (hcg) and hcg.torch, with
# Debian's mypy (scripts/deps.sh installs it) and the settings of
# pyproject.toml's [tool.mypy] (torch is not followed: see there).
#
# Bounded: gives up after $HCG_MYPY_TIMEOUT seconds (default 300). Its
# cache lives outside the source tree. Exits non-zero on any finding.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
if ! command -v mypy >/dev/null 2>&1; then
    echo "$0: no mypy (Debian's package mypy: scripts/deps.sh installs it)" >&2
    exit 1
fi
cache=${TMPDIR:-/tmp}/hcg-mypy-cache.$(id -u)
echo "== $(mypy --version)"
cd "$here"
# Not exec'd: timeout fails (125) when it is a PID namespace's first process,
# as it is when scripts/tier.sh runs this script alone.
timeout "${HCG_MYPY_TIMEOUT:-300}" mypy --strict --cache-dir "$cache" \
    --config-file pyproject.toml
