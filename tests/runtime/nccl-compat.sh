#!/bin/bash
# nccl-compat.sh BUILD_DIR - compiles libhcg's NCCL code (runtime/lib/nccl.c,
# comm_nccl.c, create.c, exchange.c) against small stand-in nccl.h headers
# of older NCCL releases, to prove the NCCL_VERSION_CODE guards: 2.18 (the oldest
# supported: no trafficClass, commName, collnetEnable), 2.22 (the last
# without ncclCommInitRankScalable), 2.23 (with it), 2.26 (trafficClass),
# 2.27 (commName, collnetEnable); and checks that a 2.17 header is refused
# with libhcg's own message. This tests compilation only, never behaviour:
# the stand-ins declare what libhcg calls and nothing is linked or run.
#
# BUILD_DIR is a configured tree with NCCL and CUDA (its config.h); without
# them the check says so and passes (there is nothing to guard).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: nccl-compat.sh BUILD_DIR}" && pwd)
cc=${CC:-cc}

if ! grep -q '^#define HCG_HAVE_NCCL 1' "$build/config.h" ||
  ! grep -q '^#define HCG_HAVE_CUDA 1' "$build/config.h"; then
  echo "nccl-compat: SKIP: $build was configured without NCCL or CUDA"
  exit 0
fi
# CUDA's headers (cuda_runtime_api.h), from the build's own flags.
cuda_cflags=$(sed -n 's/^CUDA_CFLAGS = //p' "$build/runtime/Makefile")
# The language and warning flags every file is built with (configure.ac).
std=$(sed -n 's/^HCG_STD_CFLAGS = //p' "$build/runtime/Makefile")
warn=$(sed -n 's/^HCG_WARN_CFLAGS = //p' "$build/runtime/Makefile")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# stub MAJOR MINOR: a minimal nccl.h of that release into $tmp/MAJOR.MINOR/.
stub() {
  local major=$1 minor=$2 code=$(($1 * 10000 + $2 * 100))
  local dir=$tmp/$major.$minor fields=""
  mkdir -p "$dir"
  [ "$minor" -ge 18 ] && fields+="  int splitShare;"$'\n'
  [ "$minor" -ge 26 ] && fields+="  int trafficClass;"$'\n'
  [ "$minor" -ge 27 ] && fields+="  const char *commName;"$'\n  int collnetEnable;\n'
  local init="" scalable=""
  [ "$minor" -ge 23 ] && scalable="ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks,
    int myrank, int nId, ncclUniqueId *commIds, ncclConfig_t *config);"
  [ "$minor" -ge 18 ] && init+=", NCCL_CONFIG_UNDEF_INT"
  [ "$minor" -ge 26 ] && init+=", NCCL_CONFIG_UNDEF_INT"
  [ "$minor" -ge 27 ] && init+=", NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT"
  cat >"$dir/nccl.h" <<EOF
/* Stand-in nccl.h of NCCL $major.$minor for a compile test of libhcg. */
#ifndef NCCL_H_
#define NCCL_H_
#include <limits.h>
#include <stddef.h>
#define NCCL_MAJOR $major
#define NCCL_MINOR $minor
#define NCCL_PATCH 0
#define NCCL_VERSION_CODE $code
#define NCCL_VERSION(X, Y, Z) \\
  (((X) <= 2 && (Y) <= 8) ? (X)*1000 + (Y)*100 + (Z) : (X)*10000 + (Y)*100 + (Z))
typedef struct ncclComm *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;
typedef enum {
  ncclSuccess = 0, ncclUnhandledCudaError = 1, ncclSystemError = 2,
  ncclInternalError = 3, ncclInvalidArgument = 4, ncclInvalidUsage = 5,
  ncclRemoteError = 6, ncclInProgress = 7, ncclNumResults = 8
} ncclResult_t;
#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
typedef struct ncclConfig_v$code {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char *netName;
$fields} ncclConfig_t;
#define NCCL_CONFIG_INITIALIZER                                           \\
  { sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, \\
    NCCL_PATCH), NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,            \\
    NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                         \\
    NCCL_CONFIG_UNDEF_PTR$init }
ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
                                    ncclUniqueId commId, int rank,
                                    ncclConfig_t *config);
$scalable
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
#endif
EOF
}

# compile MAJOR.MINOR FILE: compiles one libhcg file against that stand-in.
compile() {
  # shellcheck disable=SC2086 # the flags are words
  "$cc" $std $warn -pthread \
    -I"$tmp/$1" -I"$build" -I"$src/runtime" -I"$src/runtime/lib" \
    $cuda_cflags -c "$src/runtime/lib/$2" -o "$tmp/$1-${2%.c}.o"
}

fail=0
for v in 2.18 2.22 2.23 2.26 2.27; do
  stub "${v%%.*}" "${v#*.}"
  for f in nccl.c comm_nccl.c create.c exchange.c; do
    if compile "$v" "$f" 2>"$tmp/err"; then
      echo "nccl-compat: NCCL $v: $f compiles"
    else
      echo "nccl-compat: NCCL $v: $f does NOT compile:" >&2
      cat "$tmp/err" >&2
      fail=1
    fi
  done
done

# The guard of ncclCommInitRankScalable: called from 2.23 on, never before.
calls_scalable() { nm "$tmp/$1-comm_nccl.o" 2>/dev/null | grep -q ' U ncclCommInitRankScalable$'; }
if calls_scalable 2.22 || ! calls_scalable 2.23; then
  echo "nccl-compat: ncclCommInitRankScalable is not guarded at 2.23" >&2
  fail=1
else
  echo "nccl-compat: ncclCommInitRankScalable: called from 2.23 on, not by 2.22"
fi

# Older than the minimum: refused, with libhcg's message, not a stray error.
stub 2 17
if compile 2.17 nccl.c 2>"$tmp/err"; then
  echo "nccl-compat: NCCL 2.17 was accepted; libhcg needs 2.18" >&2
  fail=1
elif grep -q 'libhcg needs NCCL 2.18.0 or newer' "$tmp/err"; then
  echo "nccl-compat: NCCL 2.17: refused (libhcg needs NCCL 2.18.0 or newer)"
else
  echo "nccl-compat: NCCL 2.17 failed without libhcg's message:" >&2
  cat "$tmp/err" >&2
  fail=1
fi
exit "$fail"
