#!/bin/bash
# platform-row.sh TIER - README's "Supported platforms" row for TIER says
# what this machine (or root) has: Debian's release, and the major.minor of
# Slurm, PMIx, torch, Python and gcc as its packages install them. The
# table is the one place these facts are written; this keeps it true when
# a stack moves. Exits 1 naming each difference.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
tier=${1:?usage: platform-row.sh TIER}

row=$(grep -E "^\| \`$tier\` \|" "$src/README.md" || true)
[ -n "$row" ] || {
  echo "platform-row: README.md has no row for \`$tier\` in its platforms table" >&2
  exit 1
}
IFS='|' read -r _ _ debian slurm pmix torch python compiler _ <<<"$row"

# The first NUMBER.NUMBER of a text.
mm() { grep -Eo '[0-9]+\.[0-9]+' <<<"$1" | head -n 1; }
pkg() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null | sed -E 's/^[0-9]+://'; }

status=0
same() { # WHAT README_CELL INSTALLED
  local want have
  want=$(mm "$2")
  have=$(mm "$3")
  if [ -z "$have" ] || [ "$want" != "$have" ]; then
    echo "platform-row: $tier: README says $1 '$(xargs <<<"$2")', this stack has ${3:-nothing}" >&2
    status=1
  else
    echo "ok $1 $have"
  fi
}

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
case $debian in
*"($codename)"* | *unstable*) echo "ok Debian $codename" ;;
*)
  echo "platform-row: $tier: README says Debian '$(xargs <<<"$debian")', this is $codename" >&2
  status=1
  ;;
esac
same Slurm "$slurm" "$(pkg slurmd)"
same PMIx "$pmix" "$(pkg libpmix-dev)"
same torch "$torch" "$(pkg python3-torch)"
same Python "$python" "$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
same gcc "$compiler" "$(gcc -dumpfullversion)"
exit $status
