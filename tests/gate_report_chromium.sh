#!/usr/bin/env bash
# Renders the example gate's HTML report (left by examples/gate/run-example in WORKDIR) in
# headless Chromium from its file:// URL, takes a screenshot, and checks the rendered DOM with
# gate_report_check: every case and its verdict on the page, the page's script run.
#   gate_report_chromium.sh GATE_REPORT_CHECK WORKDIR
# Then checks that the check can fail: the same DOM with one case's verdict altered is refused.
set -euo pipefail
check=$1 work=$2
fail() { echo "gate_report_chromium: $*" >&2; exit 1; }
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || fail "chromium not found (Debian package 'chromium': scripts/install-deps installs it)"
report="$work/report/index.html"
[ -s "$report" ] || fail "$report missing (run the example_gate test first)"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# --no-sandbox: CI containers run as root, where Chromium's sandbox cannot start.
flags=(--headless --no-sandbox --disable-gpu --user-data-dir="$profile" --window-size=1280,4000)
timeout 120 "$chromium" "${flags[@]}" --dump-dom "file://$report" > "$work/report-dom.html" 2> "$work/chromium.log" ||
  fail "chromium --dump-dom failed (see $work/chromium.log)"
rm -f "$work/report.png"
timeout 120 "$chromium" "${flags[@]}" --screenshot="$work/report.png" "file://$report" 2>> "$work/chromium.log" ||
  fail "chromium --screenshot failed (see $work/chromium.log)"
# A PNG, and not a blank page (a white 1280x4000 page compresses to a few kilobytes).
[ "$(head -c 8 "$work/report.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$work/report.png is not a PNG"
[ "$(stat -c %s "$work/report.png")" -gt 50000 ] || fail "$work/report.png is nearly empty: the page did not render"
"$check" "$work/gate.json" "$work/report-dom.html"
# The check must be able to fail: a page where the regressed case shows as consistent.
sed 's/data-verdict="regressed"/data-verdict="consistent"/' "$work/report-dom.html" > "$work/report-dom-altered.html"
if "$check" "$work/gate.json" "$work/report-dom-altered.html" 2>/dev/null; then
  fail "gate_report_check accepted a page with a wrong verdict"
fi
echo "gate_report_chromium: the report renders in Chromium with every case and verdict (screenshot: $work/report.png)"
