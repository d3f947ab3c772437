#!/usr/bin/env bash
# The project's test command (README "Run the tests"): installs what the tests need on a fresh
# machine, checks formatting and lints, then runs every test in the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

# Rust toolchain pieces: lints, formatting, and the Wasm targets the sample jobs are built for
# (preview1 modules and WASI 0.2 components).
rustup component add clippy rustfmt >/dev/null 2>&1 || true
for target in wasm32-wasip1 wasm32-wasip2; do
  rustup target list --installed | grep -qx "$target" || rustup target add "$target"
done

# Database servers for the storage contract suites; start them if they are down.
if command -v pg_isready >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
fi
if command -v mariadb-admin >/dev/null && ! mariadb-admin -h 127.0.0.1 -uroot ping >/dev/null 2>&1; then
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd || true
fi
# Headless Chromium and its WebDriver for the browser test of the web UI (tests/tests/browser).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver
fi
# A real Prometheus (Debian's) runs every query of the Grafana dashboard against the /metrics
# pages in the system test (tests/tests/system/metrics.rs).
if ! command -v prometheus >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
fi
# Debian's PHP, so a GLUE(PHP) script really runs (tests/tests/executor/scripts.rs).
if ! command -v php >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends php-cli
fi
# Bubblewrap, so the Kubernetes test runs each daemon as its container would: a read-only root,
# the manifest's writable volumes, a non-root user (tests/tests/system/kubernetes.rs).
if ! command -v bwrap >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap
fi
# A third-party executor for the interop tests (pyxxl from PyPI) and the Prometheus project's
# OpenMetrics parser for the /metrics tests (prometheus-client) and the official MCP client for the
# MCP server's test (mcp), and the offline Kubernetes schema validator for the manifests
# (kubernetes-validate), in a venv kept beside the build.
venv="$(realpath -m "${CARGO_TARGET_DIR:-target}")/pyxxl-venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pyxxl, prometheus_client, mcp, kubernetes_validate' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'pyxxl==0.4.8' 'prometheus-client==0.21.1' 'mcp==1.30.0' \
    'kubernetes-validate==1.37.0'
fi
export JOBWHEEL_PYXXL_PYTHON="$venv/bin/python"
export JOBWHEEL_OPENMETRICS_PYTHON="$venv/bin/python"
export JOBWHEEL_KUBERNETES_VALIDATE="$venv/bin/kubernetes-validate"

# Guest toolchains for the Python and JavaScript sample components (sample-jobs/components),
# kept beside the build: componentize-py from PyPI, componentize-js from npm, both pinned. The
# components are rebuilt only when their sources or the WIT change (each build takes ~20 s).
tools="$(realpath -m "${CARGO_TARGET_DIR:-target}")/guest-tools"
if [ ! -x "$tools/py/bin/componentize-py" ]; then
  python3 -m venv "$tools/py"
  "$tools/py/bin/pip" install --quiet --disable-pip-version-check 'componentize-py==0.25.1'
fi
if [ ! -x "$tools/js/node_modules/.bin/componentize-js" ]; then
  mkdir -p "$tools/js"
  (cd "$tools/js" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund '@bytecodealliance/componentize-js@0.23.0')
fi
components="$tools/components"
stamp="$(cat sample-jobs/components/python/*.py sample-jobs/components/js/*.js guest-sdk/python/*.py \
  guest-sdk/js/*.js wit/*.wit wit/deps/*.wit | sha256sum | cut -c1-16)"
if [ "$(cat "$components/stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "== guest components (Python, JavaScript)"
  rm -rf "$components"
  mkdir -p "$components/python" "$components/js"
  (cd sample-jobs/components/python && PYTHONDONTWRITEBYTECODE=1 "$tools/py/bin/componentize-py" \
    -d ../../../wit -w jobwheel:job/job componentize -p . app -o "$components/python/http-check.wasm")
  (cd sample-jobs/components/python && PYTHONDONTWRITEBYTECODE=1 "$tools/py/bin/componentize-py" \
    -d ../../../wit -w jobwheel:job/job componentize -p . -p ../../../guest-sdk/python workflow_step \
    -o "$components/python/workflow-step.wasm")
  (cd sample-jobs/components/js && "$tools/js/node_modules/.bin/componentize-js" \
    --wit ../../../wit --world-name jobwheel:job/job -o "$components/js/http-check.wasm" app.js)
  # From the root: componentize-js loads imported modules only from below its working directory.
  "$tools/js/node_modules/.bin/componentize-js" --wit wit --world-name jobwheel:job/job \
    -o "$components/js/workflow-step.wasm" sample-jobs/components/js/workflow-step.js
  echo "$stamp" >"$components/stamp"
fi
export JOBWHEEL_GUEST_COMPONENTS="$components"

# Real identity servers for the single sign-on tests (docs/sso.md): Debian's OpenLDAP slapd, which
# the LDAP test starts on a free port with its own directory (admin/tests/all/http/mgmt/sso_ldap.rs),
# and the npm package oidc-provider, pinned and kept beside the build, which the browser test runs
# as its OpenID provider (admin/tests/interop/oidc_provider.mjs).
if [ ! -x /usr/sbin/slapd ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slapd
fi
oidc="$tools/oidc"
if [ "$(node -p "require('$oidc/node_modules/oidc-provider/package.json').version" 2>/dev/null)" != "9.13.3" ]; then
  rm -rf "$oidc" && mkdir -p "$oidc"
  (cd "$oidc" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund 'oidc-provider@9.13.3')
fi
export JOBWHEEL_OIDC_PROVIDER="$oidc/node_modules/oidc-provider"

export JOBWHEEL_TEST_POSTGRES_URL="${JOBWHEEL_TEST_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/test}"
export JOBWHEEL_TEST_MYSQL_URL="${JOBWHEEL_TEST_MYSQL_URL:-mysql://root@127.0.0.1:3306/test}"

# Supply chain (deny.toml): licences, banned crates and sources always; RustSec advisories
# when an advisory database is at hand (JOBWHEEL_ADVISORY_DB: a clone of rustsec/advisory-db or
# a git bundle of it; .ci/run finds one beside the clone), where a new advisory fails the run. A
# local copy, because cargo-deny would fetch the database from a git host this machine may not
# reach.
echo "== cargo deny"
command -v cargo-deny >/dev/null || cargo install cargo-deny --version 0.20.2 --locked
# `--offline` reads the crates from Cargo's cache: on a fresh machine nothing is there yet, and
# cargo-deny needs every crate of Cargo.lock, other platforms' ones included.
cargo fetch --locked
cargo deny --offline check bans licenses sources
if [ -n "${JOBWHEEL_ADVISORY_DB:-}" ]; then
  advisories="$(realpath -m "${CARGO_TARGET_DIR:-target}")/advisory-db"
  # cargo-deny 0.20 keeps the default database under this name inside db-path.
  rm -rf "$advisories" && mkdir -p "$advisories"
  db="$advisories/advisory-db-3157b0e258782691"
  # A clone of the database or a git bundle of it (a one-commit bundle lacks its parents: mark
  # its commit shallow so git reads it as a root).
  git -c advice.detachedHead=false clone -q "$JOBWHEEL_ADVISORY_DB" "$db"
  if ! git -C "$db" log -1 --format=%cs >/dev/null 2>&1; then
    git -C "$db" rev-parse HEAD >"$db/.git/shallow"
  fi
  echo "advisory database of $(git -C "$db" log -1 --format=%cs), from $JOBWHEEL_ADVISORY_DB"
  sed "s|^yanked = \"deny\"|yanked = \"deny\"\ndb-path = \"$advisories\"|" deny.toml >"$advisories/deny.toml"
  cargo deny --offline --config "$advisories/deny.toml" check advisories
else
  echo "advisories: not checked (set JOBWHEEL_ADVISORY_DB to a clone of the RustSec advisory-db)"
fi

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"
# The daemon binaries first: process-level tests start them from the target directory, and
# `cargo test` builds a package's binaries only for that package's own integration tests.
# `--tests` too, so the binaries are built with the dev-dependencies' features unified as
# `cargo test` resolves them: with `--bins` alone every crate below (wasmtime included) was
# built twice, once per feature set.
cargo build --workspace --bins --tests
# Both daemons' .deb packages, from the binaries just built, for the package test
# (tests/tests/system/packages.rs, which installs them with dpkg -i). Dev-profile binaries: the
# test checks the packaging, and a release build would compile wasmtime once more; cargo-deb
# only warns about the profile. Releases use `cargo deb -p …` (docs/deployment.md).
command -v cargo-deb >/dev/null || cargo install cargo-deb --version 3.8.0 --locked
export JOBWHEEL_DEBS="$(realpath -m "${CARGO_TARGET_DIR:-target}")/debian"
rm -rf "$JOBWHEEL_DEBS"
for package in jobwheel-admin jobwheel-executor; do
  cargo deb --no-build --profile dev --fast -p "$package" -o "$JOBWHEEL_DEBS/"
done
log="$(mktemp)"
chaos_report="${CARGO_TARGET_DIR:-target}/chaos-report.txt"
rm -f "$chaos_report"
trap 'rm -f "$log"' EXIT
# --no-fail-fast: one red suite must not hide the others; the run still fails at the end.
status=0
cargo test --workspace --no-fail-fast 2>&1 | tee "$log" || status=$?
# The chaos suite's books (tests/tests/chaos): what it killed and how every second was accounted.
if [ -f "$chaos_report" ]; then
  echo "== chaos suite"
  cat "$chaos_report"
  echo
fi
# One closing line for the whole run (cargo prints one per test binary, the last often a
# doc-test binary with nothing in it).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
if [ "$status" -ne 0 ]; then
  # The failures' own output again, last, where a reader of the run's tail sees it: each
  # failed test's block cut to its first 40 lines, then every line that says why it failed
  # (a panic, an error and its causes) wherever it is in the block, then its last 20 lines —
  # a test that prints a process's log before its error must not hide the error.
  echo "== failures"
  awk 'function flush(   i, from) {
         if (!n) return
         for (i = 1; i <= n && i <= 40; i++) print block[i]
         if (n > 40) print "  [...]"
         for (i = 41; i <= n - 20; i++)
           if (block[i] ~ /panicked at|^Error|Caused by|^    [0-9]+: |assertion|left:|right:/) print block[i]
         from = (n - 20 > 40) ? n - 19 : 41
         for (i = from; i <= n; i++) print block[i]
         n = 0 }
       /^---- .* stdout ----$/ { flush(); on = 1 }
       /^(failures:|test result:)/ { flush(); on = 0 }
       on { block[++n] = $0 }
       END { flush() }' "$log"
  echo "cargo test failed (exit $status); see the failures above" >&2
  exit "$status"
fi

# Fuzzing, bounded: every cargo-fuzz target for JOBWHEEL_FUZZ_SECONDS (default 45) from the
# corpus kept in fuzz/corpus/. A crash fails the run (docs/fuzzing.md).
echo "== fuzz"
bash scripts/fuzz.sh "${JOBWHEEL_FUZZ_SECONDS:-45}"
