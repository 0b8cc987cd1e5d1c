#!/usr/bin/env bash
# The CDC benchmark of BENCHMARKS.md ("DML keeps the layout"): a Hilbert-clustered
# lineitem table takes a 1% CDC MERGE, copy-on-write and with deletion vectors; the
# bytes a one-month l_shipdate filter and an l_suppkey filter read, and the
# clustered share of the table, before and after.
#
#   BENCHSKIP_CDC=/tmp/cdc BENCHSKIP_SF=0.1 go test ./internal/benchskip -run TestWriteLineitemCDC
#   scripts/bench-cdc.sh SKIPLAKE_BINARY /tmp/cdc TARGET_SIZE
#
# TARGET_SIZE is OPTIMIZE's --target-size (the table keeps the default 128 MiB
# target, which DML writes at).
#
# prints one line per measurement: mode, stage, filter, files read/total, bytes
# read (file level), bytes read after row-group skipping, and the table's files
# and clustered share.
set -euo pipefail
bin=$1 dir=$2 target=${3:-512KiB}
month="l_shipdate >= DATE '1995-03-01' AND l_shipdate < DATE '1995-04-01'"
supp="l_suppkey = 377"
measure() { # mode stage table
	local lay files clustered
	lay=$("$bin" describe "$3" --layout --format json)
	files=$(jq .files <<<"$lay")
	clustered=$(jq .clusteredFraction <<<"$lay")
	for f in month supp; do
		local expr=${!f}
		"$bin" explain "$3" --filter "$expr" --format json | jq -r --arg m "$1" --arg s "$2" --arg f "$f" --argjson files "$files" --argjson cl "$clustered" '
			(.files) as $fl | ([.levels[] | select(.level == "rowgroup")][0]) as $rg |
			"\($m)\t\($s)\t\($f)\tfiles \($fl.kept)/\($fl.total)\tbytes \(($fl.bytesTotal - $fl.bytesSkipped) * 10000 / $fl.bytesTotal | round / 100)%\trowgroup-bytes \(if $rg then (($rg.bytesTotal - $rg.bytesSkipped) * 10000 / $fl.bytesTotal | round / 100) else "n/a" end)%\ttable \($files) files, \($cl * 1000 | round / 10)% clustered"'
	done
}
for mode in copy-on-write deletion-vectors; do
	t=$(mktemp -d)/lineitem
	"$bin" append "$t" "$dir/lineitem.parquet" >/dev/null
	"$bin" optimize "$t" --hilbert-by l_shipdate,l_suppkey --target-size "$target" >/dev/null 2>&1
	if [ "$mode" = deletion-vectors ]; then
		"$bin" alter "$t" --set-property delta.enableDeletionVectors=true >/dev/null
	fi
	measure "$mode" before "$t"
	"$bin" merge "$t" "$dir/cdc.parquet" --on l_orderkey,l_linenumber --format json >"$t.merge.json" 2>/dev/null
	jq -r --arg m "$mode" '"\($m)\tmerge\t\(.mode): \(.rowsUpdated) updated, \(.rowsInserted) inserted, \(.filesRemoved) files removed, \(.filesAdded) added"' "$t.merge.json"
	measure "$mode" after "$t"
	rm -rf "$(dirname "$t")"
done
