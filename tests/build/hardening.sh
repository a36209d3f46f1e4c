#!/bin/bash
# hardening.sh - the built plugin, libhcg and the hcg command carry the
# hardening flags configure chose (m4/hcg_flags.m4): read from their ELF,
# not from the build's logs, so that a Makefile.am that drops AM_LDFLAGS or
# AM_CFLAGS for one target fails here. spank_hcg.so is loaded by root's
# slurmstepd, hence the care.
#
# Run by make check (HCG: the built hcg command, HCG_SPANK_PLUGIN: the
# plugin). Files named as arguments are held to the same flags too (the
# wheel's libhcg and hcg: tests/cluster/container.bats). Skips (77) when
# configure found no flag to use (--disable-hardening, or a compiler that
# takes none of them).
set -u
build=$(cd "$(dirname "${HCG:?HCG is the built hcg command}")/.." && pwd)
flags() { sed -n "s/^$1 = //p" "$build/runtime/Makefile"; }
cflags=$(flags HCG_HARDEN_CFLAGS)
ldflags=$(flags HCG_HARDEN_LDFLAGS)
if [ -z "${cflags// /}${ldflags// /}" ]; then
  echo "hardening: SKIP: configured without hardening flags"
  exit 77
fi
command -v readelf >/dev/null || { echo "hardening: readelf not found (binutils)" >&2; exit 1; }

failed=0
fail() {
  echo "hardening: FAIL: $1" >&2
  failed=1
}

# check FILE: each flag configure chose, seen in FILE.
check() {
  local f=$1 dyn syms
  dyn=$(readelf -dW "$f") || { fail "$f: readelf -d failed"; return; }
  syms=$(readelf --dyn-syms -W "$f") || { fail "$f: readelf --dyn-syms failed"; return; }
  case " $ldflags " in *" -Wl,-z,now "*)
    grep -qE '\((FLAGS|FLAGS_1)\).*(BIND_NOW|NOW)' <<<"$dyn" ||
      fail "$f: no BIND_NOW (-Wl,-z,now)" ;;
  esac
  case " $ldflags " in *" -Wl,-z,relro "*)
    readelf -lW "$f" | grep -q GNU_RELRO || fail "$f: no GNU_RELRO segment (-Wl,-z,relro)" ;;
  esac
  case " $cflags " in *" -fstack-protector-strong "*)
    grep -q '__stack_chk_fail' <<<"$syms" ||
      fail "$f: no __stack_chk_fail (-fstack-protector-strong)" ;;
  esac
  case " $cflags " in *" -D_FORTIFY_SOURCE="*)
    grep -v '__stack_chk_fail' <<<"$syms" | grep -qE ' __[a-z0-9_]+_chk(@|$)' ||
      fail "$f: no fortified __*_chk call (-D_FORTIFY_SOURCE)" ;;
  esac
  echo "hardening: $f: checked ($cflags $ldflags )"
}

check "$build/runtime/.libs/libhcg.so"
check "$HCG"
for f in "$@"; do
  check "$f"
done
plugin=${HCG_SPANK_PLUGIN:-$build/spank/.libs/spank_hcg.so}
if [ -f "$plugin" ]; then
  check "$plugin"
else
  echo "hardening: no plugin built (no spank.h): libhcg and hcg only"
fi
exit "$failed"
