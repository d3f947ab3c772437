#!/usr/bin/env bash
# Refreshes the web UI's vendored libraries (admin/ui/vendor/) from the npm registry with
# `npm pack`. Nothing is fetched at run time: the admin embeds these files in its binary.
# Change a version below, run this script, check the UI (cargo test -p jobwheel-tests --test
# browser), and update the versions in admin/ui/vendor/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

CODEMIRROR_VERSION=5.65.21
CHARTJS_VERSION=4.6.1
DAGRE_VERSION=3.1.3

vendor=admin/ui/vendor
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

(cd "$work" && npm pack --silent "codemirror@$CODEMIRROR_VERSION" "chart.js@$CHARTJS_VERSION" \
  "@dagrejs/dagre@$DAGRE_VERSION" >/dev/null)
mkdir -p "$work/cm" "$work/chart" "$work/dagre"
tar xzf "$work/codemirror-$CODEMIRROR_VERSION.tgz" -C "$work/cm"
tar xzf "$work/chart.js-$CHARTJS_VERSION.tgz" -C "$work/chart"
tar xzf "$work/dagrejs-dagre-$DAGRE_VERSION.tgz" -C "$work/dagre"

rm -rf "$vendor/codemirror" "$vendor/chartjs" "$vendor/dagre"
mkdir -p "$vendor/codemirror/mode" "$vendor/chartjs" "$vendor/dagre"
cm="$work/cm/package"
cp "$cm/LICENSE" "$vendor/codemirror/LICENSE"
cp "$cm/lib/codemirror.js" "$cm/lib/codemirror.css" "$vendor/codemirror/"
# The GLUE script types' modes; php needs htmlmixed (xml, javascript, css) and clike.
for mode in shell python php javascript powershell htmlmixed xml css clike; do
  cp "$cm/mode/$mode/$mode.js" "$vendor/codemirror/mode/$mode.js"
done
cp "$work/chart/package/LICENSE.md" "$vendor/chartjs/LICENSE.md"
cp "$work/chart/package/dist/chart.umd.js" "$vendor/chartjs/chart.umd.js"
# dagre's browser bundle: one self-contained script (graphlib inside) that defines `dagre`.
cp "$work/dagre/package/LICENSE" "$vendor/dagre/LICENSE"
cp "$work/dagre/package/dist/dagre.min.js" "$work/dagre/package/dist/dagre.min.js.LEGAL.txt" "$vendor/dagre/"
echo "vendored codemirror $CODEMIRROR_VERSION, chart.js $CHARTJS_VERSION and dagre $DAGRE_VERSION into $vendor"
