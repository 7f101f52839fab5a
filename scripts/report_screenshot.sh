#!/usr/bin/env bash
# Renders a preempt report in a real headless Chromium and saves a screenshot of it
# (issue 6: the report is "verified in a real headless Chromium screenshot").
#
# Usage: scripts/report_screenshot.sh [REPORT_DIR] [OUT_PNG]
#   REPORT_DIR  a directory holding index.html. Default: a fresh `preempt run --quick`
#               into target/report-screenshot/report (about 30 s of measuring).
#   OUT_PNG     default docs/report-screenshot.png
# Environment:
#   PREEMPT     the preempt binary to use (default: build it with cargo, release profile)
#   WIDTH, HEIGHT  browser window in CSS pixels (default 1280 x 2400: the summary, the
#               readiness check and the first latency figures)
#
# Needs chromium (Debian: apt-get install -y chromium). Exits non-zero when the browser
# fails or the image is missing, too small or not a PNG.
set -euo pipefail
cd "$(dirname "$0")/.."

report_dir=${1:-}
out=${2:-docs/report-screenshot.png}
width=${WIDTH:-1280}
height=${HEIGHT:-2400}

browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
if [[ -z "$browser" ]]; then
    echo "report_screenshot: no chromium found; install it (apt-get install -y chromium)" >&2
    exit 1
fi

if [[ -z "$report_dir" ]]; then
    preempt=${PREEMPT:-}
    if [[ -z "$preempt" ]]; then
        cargo build --release -p preempt-cli --bin preempt >&2
        preempt="${CARGO_TARGET_DIR:-target}/release/preempt"
    fi
    if ! "$preempt" run --help >/dev/null 2>&1; then
        echo "report_screenshot: $preempt has no 'run' subcommand; pass a report directory instead" >&2
        exit 1
    fi
    report_dir=target/report-screenshot/report
    rm -rf "$report_dir"
    "$preempt" run --quick --no-progress --no-history -o "$report_dir" >&2
fi

index="$report_dir/index.html"
if [[ ! -f "$index" ]]; then
    echo "report_screenshot: $index does not exist" >&2
    exit 1
fi

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
mkdir -p "$(dirname "$out")"
rm -f "$out"
# --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start. The other flags
# keep the browser off the network and away from any state outside $profile.
timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --hide-scrollbars --force-device-scale-factor=1 --window-size="$width,$height" \
    --screenshot="$out" "file://$(realpath "$index")" >/dev/null 2>&1 || true

if [[ ! -s "$out" ]]; then
    echo "report_screenshot: chromium wrote no screenshot" >&2
    exit 1
fi
magic=$(head -c 8 "$out" | od -An -tx1 | tr -d ' \n')
if [[ "$magic" != "89504e470d0a1a0a" ]]; then
    echo "report_screenshot: $out is not a PNG" >&2
    exit 1
fi
# IHDR width and height (big-endian at bytes 16..24).
dims=$(od -An -tu1 -j16 -N8 "$out" | awk '{print ($1*16777216+$2*65536+$3*256+$4) "x" ($5*16777216+$6*65536+$7*256+$8)}')
size=$(stat -c %s "$out")
# A blank page compresses to a few kilobytes; the report's tables and figures do not.
if (( size < 40000 )); then
    echo "report_screenshot: $out is only $size bytes ($dims): the page probably did not render" >&2
    exit 1
fi
echo "report_screenshot: $out ($dims, $size bytes) from $index"
