#!/usr/bin/env bash
# Alternates the shared store (DuckLake on PostgreSQL, duckdb 1.5.5) with the DuckDB file (duckdb 2.0.1 in
# .venv, and 1.5.5 in .venv-shared), ROUNDS times each, one JSON line per run (bench/bench_shared_store.py).
#   bench/bench_shared_ab.sh PG_URL [ROUNDS] [CELLS]     e.g. postgresql://postgres@127.0.0.1:5432
# PG_URL's server must let this user create databases; each lake run gets a fresh one.
set -euo pipefail
cd "$(dirname "$0")/.."
pg=$1; rounds=${2:-3}; cells=${3:-1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for r in $(seq "$rounds"); do
    .venv/bin/python bench/bench_shared_store.py --db "$tmp/f$r.duckdb" --cells "$cells"
    psql "$pg/postgres" -qc "DROP DATABASE IF EXISTS bench_$r" -c "CREATE DATABASE bench_$r"
    .venv-shared/bin/python bench/bench_shared_store.py --cells "$cells" \
        --db "ducklake:postgres://${pg#*://}/bench_$r?data_path=$tmp/lake$r/"
    .venv-shared/bin/python bench/bench_shared_store.py --db "$tmp/s$r.duckdb" --cells "$cells"
done
