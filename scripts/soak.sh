#!/usr/bin/env bash
# The soak behind docs/benchmarks.md "The soak": the chaos scenario over many kill plans, each
# on a fresh database with its books checked (0 lost, 0 doubled, 0 runs left open, every
# workflow node once). Debug build: the admins' fault points (pre-read, claim, dispatch,
# outcome) exist only there. Every plan's report and each part's tally are appended to
# target/soak-report.txt (SOAK_REPORT to put it elsewhere).
#   scripts/soak.sh                          # all: the four MariaDB seeds of 2026-11-27..29
#                                            # replayed, then 100 plans on MariaDB, 50 on
#                                            # PostgreSQL and 50 on SQLite (about 3.5 hours)
#   scripts/soak.sh replay                   # the four seeds only (45 s each, outside kills)
#   scripts/soak.sh mariadb 20 [--first-seed S]   # a part: one database, a count of plans
#                                            # (sqlite | postgres | mariadb; more flags: soak --help)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build -p jobwheel-admin -p jobwheel-executor -p jobwheel-tests --bin jobwheel-admin --bin jobwheel-executor --bin soak
soak="$(realpath -m "${CARGO_TARGET_DIR:-target}")/debug/soak"
report="${SOAK_REPORT:-$(realpath -m "${CARGO_TARGET_DIR:-target}")/soak-report.txt}"
export JOBWHEEL_TEST_POSTGRES_URL="${JOBWHEEL_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"
export JOBWHEEL_TEST_MYSQL_URL="${JOBWHEEL_TEST_MYSQL_URL:-mysql://root@127.0.0.1:3306/test}"
first="${SOAK_FIRST_SEED:-1}"

# The seeds whose MariaDB runs lost seconds right after an admin's SIGKILL (2026-11-27..29), on
# the chaos suite's own plan: 45 s of outside kills.
replay() {
  "$soak" --database mariadb --outside-only --chaos-secs 45 --report "$report" \
    --seeds 409884778338362644,1341598590674118350,4882118154816893734,800588104144297613
}

case "${1:-all}" in
  all)
    status=0
    replay || status=1
    "$soak" --database mariadb --plans 100 --first-seed "$first" --report "$report" || status=1
    "$soak" --database postgres --plans 50 --first-seed "$first" --report "$report" || status=1
    "$soak" --database sqlite --plans 50 --first-seed "$first" --report "$report" || status=1
    exit "$status"
    ;;
  replay) replay ;;
  sqlite | postgres | mariadb)
    database="$1"
    plans="${2:-10}"
    shift 2 || shift $#
    "$soak" --database "$database" --plans "$plans" --report "$report" "$@"
    ;;
  *)
    echo "usage: scripts/soak.sh [all | replay | sqlite|postgres|mariadb COUNT [soak flags]]" >&2
    exit 2
    ;;
esac
