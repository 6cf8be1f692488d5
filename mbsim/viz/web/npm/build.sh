#!/usr/bin/env bash
# Rebuild the viewer's bundled JavaScript from the pinned npm packages of package.json (needs node and
# npm; users and CI never do: the result is committed).  Writes ../vendor.min.js (three.js with its orbit
# controls, and uPlot, minified, one IIFE) and ../uPlot.min.css, and prints their sha256.
set -euo pipefail
cd "$(dirname "$0")"
npm install --no-audit --no-fund --ignore-scripts=false >/dev/null
npx esbuild entry.js --bundle --minify --format=iife --legal-comments=eof --outfile=../vendor.min.js
cp node_modules/uplot/dist/uPlot.min.css ../uPlot.min.css
sha256sum ../vendor.min.js ../uPlot.min.css
