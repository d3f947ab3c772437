#!/usr/bin/env bash
# Runs jobwheel on this machine: jobwheel-admin on embedded SQLite (./data) with the web UI at
# http://127.0.0.1:8080/, and one executor registered with it. Ctrl-C stops both. On first start
# the admin prints the generated access token and the password of user `admin`, and creates a
# sample GLUE_WASM job ("Hello (Wasm sample)") ready to trigger; the executor reads the token
# from data/access-token.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target list --installed | grep -qx wasm32-wasip1 || rustup target add wasm32-wasip1
# The `quickstart` profile (Cargo.toml): dev without debug info a newcomer would wait for and not read.
cargo build --profile quickstart -p jobwheel-admin -p jobwheel-executor
cargo build --release --target wasm32-wasip1 --manifest-path sample-jobs/Cargo.toml -p hello
bin="${CARGO_TARGET_DIR:-target}/quickstart"
sample="$(realpath -m "${CARGO_TARGET_DIR:-sample-jobs/target}")/wasm32-wasip1/release/hello.wasm"
mkdir -p data

"$bin/jobwheel-admin" --listen 127.0.0.1:8080 --database-url sqlite://data/jobwheel.db \
  --demo-job "$sample" &
admin=$!
executor=""
trap 'kill $admin $executor 2>/dev/null || true; wait' EXIT INT TERM

# The admin writes its token (configured or generated) before it starts serving.
for _ in $(seq 300); do
  [ -s data/access-token ] && break
  kill -0 "$admin" 2>/dev/null || { echo "jobwheel-admin exited; see its output above" >&2; exit 1; }
  sleep 0.1
done
[ -s data/access-token ] || { echo "jobwheel-admin did not write data/access-token" >&2; exit 1; }

JOBWHEEL_ACCESS_TOKEN="$(cat data/access-token)" "$bin/jobwheel-executor" \
  --admin-addresses http://127.0.0.1:8080 --app-name jobwheel-executor \
  --listen 127.0.0.1:9999 --log-path data/executor-logs --wasm-cache-dir data/wasm-cache &
executor=$!
echo "jobwheel is running: web UI at http://127.0.0.1:8080/ (user admin; Ctrl-C stops)"
wait
