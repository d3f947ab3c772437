#!/usr/bin/env bash
# The admin benchmark suite behind docs/benchmarks.md: builds release binaries, then runs
# bench-admin for trigger throughput (FIX_RATE, SQLite, PostgreSQL and MariaDB), a manual-trigger flood,
# lateness with 10 000 cron jobs, and cost at 1k/10k/100k jobs. Job logs go to tmpfs.
#   scripts/bench.sh            # everything (about 20 minutes)
#   scripts/bench.sh throughput # one part: throughput | flood | lateness | scale | million | shared | monitors | ratchjob | e2e | ratchjob-e2e | ten-thousand
set -euo pipefail
cd "$(dirname "$0")/.."
part="${1:-all}"
duration="${JOBWHEEL_BENCH_SECONDS:-60}"
cargo build --release -p jobwheel-admin -p jobwheel-executor -p jobwheel-tests --bin bench-admin --bin bench-monitors --bin jobwheel-admin --bin jobwheel-executor
bench="$(realpath -m "${CARGO_TARGET_DIR:-target}")/release/bench-admin"
export TMPDIR="${TMPDIR:-/dev/shm}" RUST_LOG=error
pg="${JOBWHEEL_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"
my_server="${JOBWHEEL_BENCH_MYSQL_SERVER:-mysql://root@127.0.0.1:3306}"

# bench-admin on a fresh PostgreSQL schema (it needs an empty database), dropped afterwards.
run_pg() {
  local schema="jobwheel_bench_$RANDOM$RANDOM"
  psql -q "$pg" -c "CREATE SCHEMA $schema" >/dev/null
  run "$@" --database-url "$pg?options[search_path]=$schema" || true
  psql -q "$pg" -c "DROP SCHEMA $schema CASCADE" >/dev/null 2>&1
}

# bench-admin on a fresh MySQL/MariaDB database, dropped afterwards.
run_my() {
  local db="jobwheel_bench_$RANDOM$RANDOM"
  mariadb -h 127.0.0.1 -uroot -e "CREATE DATABASE $db"
  run "$@" --database-url "$my_server/$db" || true
  mariadb -h 127.0.0.1 -uroot -e "DROP DATABASE $db" >/dev/null 2>&1
}

run() { echo "## $(basename "$bench") $*"; "$bench" "$@"; echo; }

if [[ $part == all || $part == throughput ]]; then
  for jobs in 2000 4000 5000 6000 10000; do run --jobs "$jobs" --duration "$duration"; done
  for jobs in 1000 2000 3000; do run_pg --jobs "$jobs" --duration "$duration"; done
  for jobs in 1000 2000 3000; do run_my --jobs "$jobs" --duration "$duration"; done
fi
if [[ $part == all || $part == flood ]]; then
  run --mode manual --jobs 1000 --concurrency 64 --duration "$duration"
fi
if [[ $part == all || $part == lateness ]]; then
  run --mode cron --jobs 10000 --cron-period 10 --duration "$duration"
fi
if [[ $part == all || $part == scale ]]; then
  for jobs in 1000 10000 100000; do run --mode cron --jobs "$jobs" --cron-period 60 --duration "$duration"; done
fi
if [[ $part == all || $part == million ]]; then
  # A million hourly CRON jobs (issue 34): lateness, RSS, pre-read and job-list times, restart.
  for db in sqlite pg; do
    args=(--mode cron --cron-period 3600 --jobs 1000000 --duration 30 --warmup 10 --scale-checks)
    if [[ $db == pg ]]; then run_pg "${args[@]}"; else run "${args[@]}"; fi
  done
fi
if [[ $part == all || $part == shared ]]; then
  # One admin against two sharing the scheduling (issue 14), same load, same database server.
  for jobs in 2000 4000; do
    run_pg --jobs "$jobs" --executors 2 --duration "$duration"
    run_pg --jobs "$jobs" --executors 2 --admins 2 --duration "$duration"
  done
fi
if [[ $part == ten-thousand ]]; then
  # Issue 58, item 5: 10 000 triggers a second on each database, and two admins sharing them on
  # PostgreSQL; bench-admin prints the database work per trigger (statements, the server's own
  # counters: counters.rs).
  run --jobs 10000 --duration "$duration"
  run_pg --jobs 10000 --duration "$duration"
  run_my --jobs 10000 --duration "$duration"
  run_pg --jobs 10000 --executors 2 --admins 2 --duration "$duration"
fi
if [[ $part == all || $part == monitors ]]; then
  bench="$(dirname "$bench")/bench-monitors"
  for logs in 100000 1000000; do run --logs "$logs"; done
  run_pg --logs 1000000
  run_my --logs 1000000
  # The report's minute pass: two hours at 1 000/s, a day at 100/s, three days at 50/s.
  run --logs 7200000 --hours 2 --per-minute 60000 --repeat 5
  run --logs 8640000 --hours 24 --per-minute 6000 --repeat 5
  run --logs 12960000 --hours 72 --per-minute 3000 --repeat 5
  run_pg --logs 3600000 --hours 1 --per-minute 60000 --repeat 5
  run_my --logs 3600000 --hours 1 --per-minute 60000 --repeat 5
fi
# ratchjob's binary, built once from crates.io into the target directory (about 10 minutes).
ratchjob="$(dirname "$bench")/../ratchjob/bin/ratchjob"
need_ratchjob() {
  if [[ ! -x $ratchjob ]]; then
    cargo install ratchjob --version 0.3.1 --locked --root "$(dirname "$bench")/../ratchjob"
  fi
}
if [[ $part == all || $part == ratchjob ]]; then
  # The same loads against ratchjob (issue 14's comparison), runs interleaved.
  need_ratchjob
  for jobs in 1000 3000 6000 10000; do
    run --ratchjob "$ratchjob" --jobs "$jobs" --duration "$duration"
    run --jobs "$jobs" --duration "$duration"
  done
fi
if [[ $part == all || $part == ratchjob-e2e ]]; then
  # Issue 34's comparison end to end: the same jobwheel-executor process behind both admins,
  # CRON jobs, a run counted when it starts; runs interleaved.
  need_ratchjob
  for load in "1000 1" "3000 1" "10000 60"; do
    read -r jobs period <<<"$load"
    e2e=(--executor-process --mode cron --cron-period "$period" --jobs "$jobs" --duration "$duration")
    run --ratchjob "$ratchjob" "${e2e[@]}"
    run "${e2e[@]}"
  done
fi
if [[ $part == all || $part == e2e ]]; then
  # End to end (issue 34): real jobwheel-executor processes, CRON jobs, a run counted when it
  # starts (its job-log file's birth time), not when a request reaches an in-process handler.
  for jobs in 1000 3000; do run --executor-process --mode cron --cron-period 1 --jobs "$jobs" --duration "$duration"; done
  run --executor-process --mode cron --cron-period 60 --jobs 10000 --duration "$duration"
fi
