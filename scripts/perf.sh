#!/usr/bin/env bash
# The performance suite: runs the Go benchmarks that back BENCHMARKS.md and the DuckDB
# peer comparison, and writes one report. Usage:
#
#   scripts/perf.sh [OUT_DIR]          # default OUT_DIR: bench-results/<UTC date-time>
#
# Knobs (environment): BENCHTIME (default 5x), COUNT (default 3: run every benchmark
# several times, interleaved by package, so noise on a shared machine is visible),
# SKIPLAKE_BENCH_ROWS (table write/scan and export size, default 1,000,000),
# SKIPLAKE_OPTIMIZE_BENCH_ROWS, SKIPLAKE_INTEROP_REWRITE_ROWS (DuckDB rewrite comparison).
# Compare two reports with benchstat (go install golang.org/x/perf/cmd/benchstat@latest).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench-results/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
benchtime="${BENCHTIME:-5x}"
count="${COUNT:-3}"
{
  echo "# skiplake performance report"
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "go: $(go version)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') x $(nproc)"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/env.txt"

run() { # name package benchmark-regexp [benchtime]
  local name=$1 pkg=$2 re=$3 bt=${4:-$benchtime}
  echo "== $name ($pkg, -bench '$re', -benchtime $bt, -count $count)"
  go test "$pkg" -run '^$' -bench "$re" -benchtime "$bt" -count "$count" -benchmem | tee "$out/$name.txt"
}

# Fast paths and references over the same 4096 random points per op.
run keys-zorder ./zorder 'BenchmarkMorton' 100x
run keys-hilbert ./hilbert 'BenchmarkHilbert' 100x
run rank ./internal/rank 'BenchmarkRanks' 100x
run snapshot-load ./log 'BenchmarkSnapshotLoad' 3x
run commit ./log 'BenchmarkCommit' 100x
run stats-parse ./stats 'BenchmarkParse' 1s
run stats-eval ./skipping 'BenchmarkFileIndex' 10x
run expr-eval ./expr 'BenchmarkEvaluate' 10x
run bloom ./bloom 'BenchmarkProbe|BenchmarkBuild' 1s
run table-scan ./table 'BenchmarkScan|BenchmarkSelectiveScan' 2x
# A/B pairs: each side in its own process, interleaved (scripts/abbench.sh).
ab() { # name package bench-A bench-B
  echo "== $1 (A/B, separate processes)"
  RUNS="$count" BENCHTIME=2x scripts/abbench.sh "$2" "$3" "$4" | tee "$out/$1.txt"
}
ab table-write ./table 'BenchmarkWrite$/impl=pqarrow' 'BenchmarkWrite$/impl=skiplake'
ab export ./cmd/skiplake 'BenchmarkExport/impl=pqarrow' 'BenchmarkExport/impl=skiplake'
ab optimize-hilbert ./optimize 'BenchmarkRewriteCeiling' 'BenchmarkOptimize$/curve=hilbert'
ab optimize-zorder ./optimize 'BenchmarkRewriteCeiling' 'BenchmarkOptimize$/curve=zorder'
if [ -d interop ]; then
  echo "== peer: DuckDB (interop)"
  (cd interop && go test . -run '^$' -bench 'BenchmarkSelectiveFilter' -benchtime 3x -count "$count") | tee "$out/peer-duckdb.txt"
  # Rewrites vs DuckDB, one operation per process so that its peak RSS is its own;
  # the table is built once into a cache directory.
  cache=$(mktemp -d)
  (cd interop && SKIPLAKE_INTEROP_BENCH_DIR="$cache" go test . -run '^$' -bench 'BenchmarkRewrite/op=copy' -benchtime 1x >/dev/null)
  for i in $(seq "$count"); do
    for op in export/engine=skiplake copy/engine=duckdb compact/engine=skiplake sort/engine=duckdb zorder/engine=skiplake hilbert/engine=skiplake; do
      (cd interop && SKIPLAKE_INTEROP_BENCH_DIR="$cache" go test . -run '^$' -bench "BenchmarkRewrite/op=$op" -benchtime 1x) | grep '^Benchmark'
    done
  done | tee "$out/peer-duckdb-rewrite.txt"
  rm -rf "$cache"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/env.txt"
cat "$out"/*.txt > "$out/report.txt"
echo "report: $out/report.txt"
