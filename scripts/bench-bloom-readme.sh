#!/bin/bash
# usage: scripts/bench-bloom-readme.sh BINARY — the README's 2,000-row table through its Bloom backfill and UPDATE;
# prints live files / bytes / row groups after each step and the size of the file the UPDATE wrote.
set -e
B=$1; T=$(mktemp -d)/orders; cd "$(dirname "$0")/.."
live() { $B files "$T" --format jsonl | python3 -c 'import sys,json; r=[json.loads(l) for l in sys.stdin if l.strip()]; print("files", len(r), "bytes", sum(x["size"] for x in r))'; }

$B append "$T" testdata/orders.csv --partition-by country >/dev/null
echo "append:                $(live)"
$B optimize "$T" --layout workload --queries testdata/orders-queries.sql --target-size 1KiB >/dev/null 2>&1
echo "optimize workload 1KiB: $(live)"
$B optimize "$T" --hilbert-by order_id,amount --bloom order_id >/dev/null 2>&1
echo "optimize --bloom:       $(live)"
$B explain "$T" --filter "order_id = 42" | grep -i -E "bloom|row group" | head -4
$B alter "$T" --add-column "coupon string" >/dev/null
before=$(ls -1 $(find "$T" -name '*.parquet') | sort)
$B update "$T" --set "coupon = 'SPRING'" --where "country = 'JP' AND amount > 900" >/dev/null
echo "update:                 $(live)"
for f in $(find "$T" -name '*.parquet' | sort); do echo "$before" | grep -qx "$f" || echo "  written by UPDATE: $(stat -c %s $f) bytes"; done
echo "table directory: $(du -sb "$T" | cut -f1) bytes"
