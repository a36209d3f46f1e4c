# shellcheck shell=bash
#
# cluster.bash - what the cluster benchmarks share (sourced by
# bench_exchange.sh, bench_torch.sh, bench_mesh.sh and bench_srun.sh): a
# scratch directory, a private Slurm cluster when none is given, the
# environment of tasks that run hcg.torch, and order statistics.
#
#   source bench/cluster.bash
#   bench_start BUILD_DIR [own]  # $BENCH_TMP; the cluster of $SLURM_CONF
#                                # when set (and not `own`), else a fresh
#                                # one (tests/cluster/cluster.sh); both are
#                                # removed at exit
#   bench_python_env BUILD_DIR   # tasks import hcg from here, its libhcg
#   ... | bench_median           # the median of numbers, one per line
#   ... | bench_ci               # "MEDIAN LO HI": the median and its 95%
#                                # confidence interval (order statistics)
#
# The interval is distribution-free: for n samples sorted, the ranks
# j = floor(n/2 - 0.98 sqrt(n)) and k = ceil(n/2 + 1 + 0.98 sqrt(n)) bound
# the median with about 95% confidence (the binomial(n, 1/2) normal
# approximation; good from about 20 samples). Timings on a shared machine
# are skewed, so neither a mean nor a standard deviation is used.

BENCH_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH_TMP=
BENCH_OWN_CLUSTER=0

_bench_cleanup() {
  [ -n "$BENCH_TMP" ] && rm -rf "$BENCH_TMP"
  if [ "$BENCH_OWN_CLUSTER" = 1 ]; then cluster_stop; fi
}

bench_start() { # BUILD_DIR [own]
  BENCH_TMP=$(mktemp -d)
  chmod 755 "$BENCH_TMP" # tasks run as root, but keep it readable
  trap _bench_cleanup EXIT
  trap 'exit 130' INT TERM
  if [ -z "${SLURM_CONF:-}" ] || [ "${2:-}" = own ]; then
    # shellcheck source=../tests/cluster/cluster.sh
    source "$BENCH_SRC/tests/cluster/cluster.sh"
    BENCH_OWN_CLUSTER=1
    cluster_start "$1" || exit 1
  fi
}

# For benchmarks whose tasks run hcg.torch: hcg imported from this tree
# and the build's libhcg; the harness's own HCG_* variables dropped (the
# tasks would see them among theirs).
bench_python_env() { # BUILD_DIR
  unset HCG_BUILD HCG_SRCDIR
  export PYTHONPATH=$BENCH_SRC/contrib/python
  export HCG_LIBRARY=$1/runtime/.libs/libhcg.so.1
}

bench_median() {
  sort -g | awk '{v[NR] = $1}
    END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

bench_ci() {
  sort -g | awk '{v[NR] = $1}
    END {
      n = NR
      if (n == 0) { print "nan nan nan"; exit }
      m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
      h = 0.98 * sqrt(n)
      j = int(n / 2 - h); if (j < 1) j = 1
      k = n / 2 + 1 + h; if (k > int(k)) k = int(k) + 1; if (k > n) k = n
      print m, v[j], v[k]
    }'
}
