# Filters the sample orders table (testdata/orders.csv) is read with, for
# `skiplake advise` and `skiplake optimize --layout workload` in the README.
# One filter per line; "N:" gives a weight (default 1).
10: ordered_at >= TIMESTAMP '2026-01-01 00:00:00' AND ordered_at < TIMESTAMP '2026-01-02 00:00:00'
5: amount >= 900 AND ordered_at >= TIMESTAMP '2026-01-01 12:00:00'
order_id BETWEEN 100 AND 300
order_id BETWEEN 1500 AND 1700 AND amount < 100
