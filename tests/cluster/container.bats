#!/usr/bin/env bats
# hcg in a container, as pyxis users run it: this host's Slurm (with the
# plugin) starts tasks whose userland is the Debian 13 root of the platform
# tiers, standing for an image (tests/cluster/container/enter.sh does what
# enroot does: chroot, host /dev so /dev/shm, the PMIx server's directory,
# RANK and LOCAL_RANK as pyxis sets them). In the image hcg comes only from
# `pip install` of the wheel built here (from the sdist), into a fresh venv on the image's
# own Python and torch (2.6); nothing else of hcg is there. The PMIx client
# in the image (5.0.7) talks to this host's PMIx server (Debian 12: 4.2).
#
# Not in run.sh's default list: the root must exist and have its packages
# (scripts/tier.sh deps debian13), so scripts/test-all.sh
# runs this file after the tiers. Run alone:
#   tests/cluster/run.sh BUILD_DIR tests/cluster/container.bats
# Every srun is bounded by `timeout`.

load helpers

ROOT13=$("$BATS_TEST_DIRNAME/../../scripts/tier.sh" roots)/debian13
LAYOUT='llm:tp=2,dp=*; llm/expert:expt_tp=1,ep=2,expt_dp=*'

# Why this host cannot run the test, if it cannot (empty: it can).
why_not() {
  case " ${HCG_PLATFORMS:-debian13} " in
  *" debian13 "*) ;;
  *) echo "HCG_PLATFORMS='$HCG_PLATFORMS' leaves out debian13, this test's image" && return ;;
  esac
  [ "$(id -u)" = 0 ] || { echo "entering the image needs root" && return; }
  if [ ! -f "$ROOT13/etc/hcg-tier" ]; then
    echo "no Debian 13 root at $ROOT13 (scripts/tier.sh root debian13 makes it)" && return
  fi
  # shellcheck disable=SC1091 # os-release files, the root's and this host's
  if [ "$(. "$ROOT13/etc/os-release" && echo "$VERSION_CODENAME")" = \
    "$(. /etc/os-release && echo "$VERSION_CODENAME")" ]; then
    echo "this host is Debian 13 itself: the image would be no other userland" && return
  fi
  if ! chroot "$ROOT13" /usr/bin/python3 -c 'import ensurepip, pip, torch' > /dev/null 2>&1; then
    echo "the Debian 13 root lacks python3-venv, python3-pip or python3-torch (scripts/tier.sh deps debian13)" && return
  fi
  [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import setuptools, wheel, pip' > /dev/null 2>&1 ||
    echo "this host lacks python3-setuptools, python3-wheel or python3-pip (scripts/deps.sh)"
}

setup_file() {
  WHY=$(why_not)
  export WHY
  [ -z "$WHY" ] || return 0
  clean_env
  # The wheel, once: the sdist from a copy of the sources (the checkout
  # stays clean), then the wheel from the sdist alone, as pip builds one
  # that it downloaded. The copy keeps the times (make compares them) and
  # leaves out the builds (a directory configure ran in) and git's objects.
  local t0=$SECONDS src=$BATS_FILE_TMPDIR/src
  mkdir -p "$src"
  tar -C "$SRCDIR" --exclude-tag-all=config.status --exclude=./.git \
    --exclude=./contrib/python/build --exclude='./contrib/python/*.egg-info' -cf - . |
    tar -C "$src" -xf -
  (cd "$src/contrib/python" && /usr/bin/python3 -W ignore -c \
    'import sys; from setuptools import build_meta; build_meta.build_sdist(sys.argv[1])' \
    "$BATS_FILE_TMPDIR/sdist" > /dev/null)
  SDIST=$(ls "$BATS_FILE_TMPDIR"/sdist/hcg-*.tar.gz)
  HCG_WERROR=1 /usr/bin/python3 -m pip wheel -q --no-index --no-build-isolation \
    --no-deps -w "$BATS_FILE_TMPDIR/dist" "$SDIST" >&3 2>&1
  WHEEL=$(ls "$BATS_FILE_TMPDIR"/dist/hcg-*.whl)
  # A throwaway area in the image for the venv and the task scripts.
  CT=$(mktemp -d "$ROOT13/var/tmp/hcg-container.XXXXXX")
  CTIN=${CT#"$ROOT13"}
  cp "$WHEEL" "$CT/"
  cp "$BATS_TEST_DIRNAME/torch/check_groups.py" "$SRCDIR/contrib/python/examples/train_tiny.py" "$CT/"
  ENTER=$BATS_TEST_DIRNAME/container/enter.sh
  # The venv sees the image's torch; the image's pip installs into it
  # (a pip of the venv's own would only cost time).
  "$ENTER" "$ROOT13" /usr/bin/python3 -m venv --without-pip --system-site-packages "$CTIN/venv"
  "$ENTER" "$ROOT13" /usr/bin/python3 -m pip --python "$CTIN/venv/bin/python" \
    install -q --no-index "$CTIN/$(basename "$WHEEL")" >&3 2>&1
  echo "# wheel $(basename "$WHEEL"): $(stat -c %s "$WHEEL") bytes (sdist $(stat -c %s "$SDIST")); built and installed in $((SECONDS - t0)) s" >&3
  export WHEEL CT CTIN ENTER SRCDIR BUILD
}

teardown_file() {
  case ${CT:-} in
  "$ROOT13"/var/tmp/hcg-container.*) rm -rf --one-file-system "$CT" ;;
  esac
}

# helpers.bash's setup, after the skip check; the image's interpreter.
eval "helpers_$(declare -f setup)"
setup() {
  [ -z "$WHY" ] || skip "$WHY"
  helpers_setup
  PY=$CTIN/venv/bin/python
}

# in_image N [SRUN_ARGS...] -- CMD...: CMD in the image on N tasks of a
# step with $LAYOUT, task R's output in $OUT/out.R and $OUT/err.R. The
# image has no PMIx library when NOPMIX=--no-pmix.
in_image() {
  local n=$1
  shift
  local args=()
  while [ "$1" != -- ]; do
    args+=("$1")
    shift
  done
  shift
  rm -f "$OUT"/out.* "$OUT"/err.*
  run timeout -k 5 150 srun -n "$n" --overcommit "${args[@]}" \
    --hcg-layout="$LAYOUT" --output="$OUT/out.%t" --error="$OUT/err.%t" \
    "$ENTER" ${NOPMIX:+"$NOPMIX"} "$ROOT13" "$@"
}

show() {
  echo "--- srun (status $status): $output"
  head -n 20 "$OUT"/out.* "$OUT"/err.* 2> /dev/null
}

@test "the wheel alone: its hcg command and binding in a fresh venv of the image" {
  # Nothing of hcg in the image but the venv: no libhcg, no hcg module.
  run "$ENTER" "$ROOT13" /bin/sh -c 'ldconfig -p | grep libhcg; command -v hcg; /usr/bin/python3 -c "import hcg._lib"'
  [ "$status" -ne 0 ] && [[ "$output" == *"No module named 'hcg._lib'"* ]] &&
    [[ "$output" != *libhcg* ]] && [[ "$output" != */hcg* ]] || { echo "$output"; false; }
  run "$ENTER" "$ROOT13" "$CTIN/venv/bin/hcg" enum -n 8 "$LAYOUT" llm:tp
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$output" = '[[0,1],[2,3],[4,5],[6,7]]' ]
  # The library is the wheel's, the torch the image's.
  run "$ENTER" "$ROOT13" "$PY" -c 'import hcg, hcg._lib, torch
print(hcg._lib.lib()._name, torch.__version__.split("+")[0])
print(hcg.Layout("tp=2,dp=*", 4).enumerate("dp"))'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "${lines[0]}" = "$CTIN/venv/lib/python3.13/site-packages/hcg/libhcg.so.1 2.6.0" ] || { echo "$output"; false; }
  [ "${lines[1]}" = '[[0, 2], [1, 3]]' ]
}

# exports LIB: the symbols LIB defines for others, sorted, one a line.
exports() {
  readelf --dyn-syms -W "$1" | awk '$5 == "GLOBAL" && $7 != "UND" { print $8 }' |
    sed 's/@.*//' | sort
}

@test "the wheel's libhcg and hcg are the project's build: its hardening flags and only hcg_ exported" {
  # setup.py packages what configure and make built (no flags of its own):
  # what tests/build/hardening.sh holds the build to, it holds these to.
  local w=$BATS_TEST_TMPDIR/wheel
  mkdir -p "$w"
  /usr/bin/python3 -m zipfile -e "$WHEEL" "$w"
  run env HCG="$BUILD/runtime/hcg" "$SRCDIR/tests/build/hardening.sh" \
    "$w/hcg/libhcg.so.1" "$w/hcg/_bin/hcg"
  [ "$status" -eq 0 ] && [[ "$output" == *"$w/hcg/libhcg.so.1: checked"* ]] &&
    [[ "$output" == *"$w/hcg/_bin/hcg: checked"* ]] || { echo "$output"; false; }
  # The export list of libhcg.la: hcg_* alone, as many as the build's.
  local ours theirs
  ours=$(exports "$w/hcg/libhcg.so.1")
  theirs=$(exports "$BUILD/runtime/.libs/libhcg.so.1")
  [ -n "$ours" ] && ! grep -v '^hcg_' <<<"$ours" || { echo "$ours"; false; }
  [ "$ours" = "$theirs" ] || { diff <(echo "$theirs") <(echo "$ours"); false; }
}

@test "srun --mpi=pmix into the image: the example trains as one process does" {
  need_pmix
  # hcg.torch.init() and new_collection() (train_tiny.py), RANK and
  # LOCAL_RANK as pyxis sets them, which init() checks against the layout.
  # shellcheck disable=SC2016 # expanded in the image
  in_image 4 --mpi=pmix -- /bin/sh -c 'echo "pyxis $RANK $LOCAL_RANK"; exec "$0" -B "$1"' \
    "$PY" "$CTIN/train_tiny.py"
  [ "$status" -eq 0 ] || { show; false; }
  local r
  for r in 0 1 2 3; do
    grep -q "^pyxis $r $r\$" "$OUT/out.$r" || { show; false; }
  done
  "$ENTER" "$ROOT13" "$PY" -B "$CTIN/train_tiny.py" --reference > "$OUT/reference" 2> /dev/null
  [ "$(grep -c '^step' "$OUT/out.0")" -eq 5 ] || { show; false; }
  same_losses "$OUT/reference" "$OUT/out.0"
}

# What hcg.torch.init does to learn rank 0's address under srun --mpi=pmix
# (its PMIx publication, rendezvous._publish), in a process without torch.
BCAST='import sys
import hcg
from hcg.torch import rendezvous
try:
    print("got", rendezvous._publish(b"addr", 10))
except hcg.HcgError as exc:
    print("hcg-error %s: %s" % (exc.name, exc))
print("torch imported" if "torch" in sys.modules else "no torch")'

@test "an image without PMIx: hcg says what is missing; MASTER_ADDR/MASTER_PORT need none" {
  need_pmix
  # Debian's torch needs libpmix itself (through Open MPI): the image
  # without PMIx runs hcg without torch, as init's publication does.
  NOPMIX=--no-pmix in_image 2 --mpi=pmix -- "$PY" -B -c "$BCAST"
  [ "$status" -eq 0 ] || { show; false; }
  local r
  for r in 0 1; do
    grep -q "^hcg-error ENOTSUP: .*PMIx's client library is not installed here (libpmix.so.2: cannot open shared object file.*set MASTER_ADDR and MASTER_PORT" \
      "$OUT/out.$r" || { show; false; }
    grep -q "^no torch$" "$OUT/out.$r" || { show; false; }
  done
  # torchrun's variables and no PMIx server at all: hcg.torch.init works,
  # and every group of every grid (and view) matches the layout.
  local port
  port=$(_cluster_free_port)
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port in_image 2 -- "$PY" -B "$CTIN/check_groups.py"
  [ "$status" -eq 0 ] || { show; false; }
  [ "$(cat "$OUT"/out.* | grep -c "^ok .*store=127.0.0.1:$port\$")" -eq 2 ] || { show; false; }
}
