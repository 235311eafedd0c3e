#!/usr/bin/env bash
# The dashboard's front-end packages, from the lock file in
# internal/dashboard/webdeps: installs exactly what the lock names (npm ci)
# and copies the built files the page loads into internal/dashboard/web/vendor,
# which the berth binary embeds. With --check it changes nothing and fails
# when the committed files differ from what the lock builds (CI runs that).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
deps=$root/internal/dashboard/webdeps
vendor=$root/internal/dashboard/web/vendor

cd "$deps"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null
built=$(mktemp -d)
trap 'rm -rf "$built"' EXIT
cp node_modules/uplot/dist/uPlot.iife.min.js node_modules/uplot/dist/uPlot.min.css "$built/"
cp node_modules/uplot/LICENSE "$built/uPlot.LICENSE"

if [ "${1:-}" = --check ]; then
  if ! diff -r "$built" "$vendor" >/dev/null; then
    echo "internal/dashboard/web/vendor is not what internal/dashboard/webdeps/package-lock.json builds: run 'make webdeps' and commit the result" >&2
    diff -rq "$built" "$vendor" >&2 || true
    exit 1
  fi
  echo "the dashboard's vendored files match the lock file"
  exit 0
fi
rm -rf "$vendor"
mkdir -p "$vendor"
cp "$built"/* "$vendor/"
echo "copied into internal/dashboard/web/vendor: $(cd "$vendor" && ls | tr '\n' ' ')"
