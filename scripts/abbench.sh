#!/usr/bin/env bash
# A/B benchmark runner: runs two Go sub-benchmarks of one package alternately, each
# in a process of its own (A B A B ...), so neither pays for the other's garbage or
# warms caches for it, and reports each side's minimum and median and the ratio of
# the pairs. Usage:
#
#   scripts/abbench.sh PKG BENCH_A BENCH_B [METRIC]
#
#   scripts/abbench.sh ./table 'BenchmarkWrite$/impl=pqarrow' 'BenchmarkWrite$/impl=skiplake'
#   scripts/abbench.sh ./optimize 'BenchmarkRewriteCeiling' 'BenchmarkOptimize$/curve=hilbert'
#
# METRIC is a metric the benchmark reports (default rows/s; higher is better). The
# ratio printed is B/A per pair (for rows/s: >1 means B is faster). Each process's
# user+sys CPU seconds and peak RSS (from /usr/bin/time) are reported too: on a
# loaded machine wall-clock throughput moves, CPU time much less.
#
# Knobs (environment): RUNS (pairs, default 5), BENCHTIME (default 2x), and whatever
# the package's benchmarks read (SKIPLAKE_BENCH_ROWS, SKIPLAKE_OPTIMIZE_BENCH_ROWS...).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 3 ]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
pkg=$1 a=$2 b=$3 metric=${4:-rows/s}
runs=${RUNS:-5} benchtime=${BENCHTIME:-2x}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/bench.test" "$pkg"
pkgdir=$(go list -f '{{.Dir}}' "$pkg")

one() { # side regexp -> "metric cpu_seconds maxrss_kb"
  local out
  out=$(cd "$pkgdir" && /usr/bin/time -f 'TIME %U %S %M' "$tmp/bench.test" -test.run '^$' -test.bench "$2" \
    -test.benchtime "$benchtime" -test.benchmem 2>&1)
  local m t
  m=$(printf '%s\n' "$out" | awk -v m="$metric" '/^Benchmark/ {for (i = 2; i < NF; i++) if ($(i+1) == m) v = $i} END {print v}')
  t=$(printf '%s\n' "$out" | awk '/^TIME/ {printf "%.2f %d", $2 + $3, $4}')
  if [ -z "$m" ]; then
    printf '%s\n' "$out" >&2
    echo "abbench: no $metric in the output of $2" >&2
    exit 1
  fi
  echo "$m $t"
}

echo "# $pkg: A='$a' B='$b' metric=$metric runs=$runs benchtime=$benchtime"
echo "# load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-4s %14s %8s %9s %14s %8s %9s %8s\n' run "A $metric" "A cpu-s" "A rss-MB" "B $metric" "B cpu-s" "B rss-MB" "B/A"
for i in $(seq "$runs"); do
  read -r ma ca ra < <(one A "$a")
  read -r mb cb rb < <(one B "$b")
  ratio=$(awk -v x="$ma" -v y="$mb" 'BEGIN {printf "%.3f", y / x}')
  printf '%-4s %14.0f %8s %9d %14.0f %8s %9d %8s\n' "$i" "$ma" "$ca" $((ra / 1024)) "$mb" "$cb" $((rb / 1024)) "$ratio"
  echo "$ma $ca $ra $mb $cb $rb $ratio" >> "$tmp/rows"
done
awk '
function median(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
{ n++; ma[n] = $1; ca[n] = $2; mb[n] = $4; cb[n] = $5; r[n] = $7; ra[n] = $3; rb[n] = $6 }
END {
  for (i = 1; i <= n; i++) { ma2[i] = ma[i]; mb2[i] = mb[i]; r2[i] = r[i]; ca2[i] = ca[i]; cb2[i] = cb[i]; ra2[i] = ra[i]; rb2[i] = rb[i] }
  printf "A: min %.0f median %.0f (cpu-s median %.2f, rss-MB median %.0f)\n", minv(ma, n), median(ma2, n), median(ca2, n), median(ra2, n) / 1024
  printf "B: min %.0f median %.0f (cpu-s median %.2f, rss-MB median %.0f)\n", minv(mb, n), median(mb2, n), median(cb2, n), median(rb2, n) / 1024
  printf "B/A per pair: min %.3f median %.3f max %.3f\n", minv(r, n), median(r2, n), maxv(r, n)
}
function minv(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
function maxv(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
' "$tmp/rows"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
