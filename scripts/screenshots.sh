#!/usr/bin/env bash
# Regenerates the UI screenshots in docs/screenshots/ (used by README.md and docs/ui.md): runs
# the browser test, which saves a 1280x800 PNG of each main page when JOBWHEEL_SCREENSHOTS is set.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/screenshots
JOBWHEEL_SCREENSHOTS="$PWD/docs/screenshots" cargo test -p jobwheel-tests --test browser -- --nocapture
ls -l docs/screenshots
