#!/usr/bin/env bash
# The performance suite: runs the Go benchmarks that back BENCHMARKS.md and the DuckDB
# peer comparison, and writes one report. Usage:
#
#   scripts/perf.sh [OUT_DIR]          # default OUT_DIR: bench-results/<UTC date-time>
#
# Knobs (environment): BENCHTIME (default 5x), COUNT (default 3: run every benchmark
# several times, interleaved by package, so noise on a shared machine is visible),
# SKIPLAKE_BENCH_ROWS (table write/scan size, default 1,000,000).
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

run keys-zorder ./zorder 'BenchmarkMorton'
run keys-hilbert ./hilbert 'BenchmarkHilbert'
run rank ./internal/rank 'BenchmarkRanks' 100x
run snapshot-load ./log 'BenchmarkSnapshotLoad' 3x
run commit ./log 'BenchmarkCommit' 100x
run stats-parse ./stats 'BenchmarkParse' 1s
run stats-eval ./skipping 'BenchmarkFileIndex' 10x
run expr-eval ./expr 'BenchmarkEvaluate' 10x
run bloom ./bloom 'BenchmarkProbe|BenchmarkBuild' 1s
run table-write-scan ./table 'BenchmarkWrite|BenchmarkScan' 2x
run optimize ./optimize 'BenchmarkOptimize|BenchmarkRewriteCeiling' 2x
if [ -d interop ]; then
  echo "== peer: DuckDB (interop)"
  (cd interop && go test . -run '^$' -bench 'BenchmarkSelectiveFilter' -benchtime 3x -count "$count") | tee "$out/peer-duckdb.txt"
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/env.txt"
cat "$out"/*.txt > "$out/report.txt"
echo "report: $out/report.txt"
