#!/usr/bin/env bash
# Measure the registered cells (registration.json) in order, after the registration was committed: each cell's
# own `critwin sweep edge` command, its runs in $STORE/store, its result in measured/<cell id>.json.
# Cells already measured are skipped; a stopped bisection continues from the runs already in $STORE (kept
# outside the repository; theory3/build_runs.py exports their per-run outcomes).
# Usage: STORE=runs/theory2 bash measure.sh [CELL_ID ...]     (default: every scorable cell, registered order)
# Then: critwin bridge score paper_checks/reports/theory2/registration.json paper_checks/reports/theory2/measured
set -euo pipefail
STORE="${STORE:-runs/theory2}"
CRITWIN="${CRITWIN:-critwin}"
HERE="$(cd "$(dirname "$0")" && pwd)"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$STORE/store" "$HERE/measured"
# the finished runs' export (runs_export/: configs, summaries, held-out rows) seeds the store, so a stopped
# bisection continues from them
python3 -c "import sys; from critwin.paper_checks.run_export import rebuild_store; rebuild_store(sys.argv[1], sys.argv[2])" "$HERE/runs_export" "$STORE/store"
CELLS=("$@")
if [ ${#CELLS[@]} -eq 0 ]; then
  mapfile -t CELLS < <(python3 -c "import json,sys; [print(c['id']) for c in json.load(open(sys.argv[1]))['cells'] if not c['build']]" "$HERE/registration.json")
fi
for cell in "${CELLS[@]}"; do
  out="$HERE/measured/$cell.json"
  [ -f "$out" ] && { echo "$cell: measured already"; continue; }
  cmd=$(python3 -c "import json,sys; print([c['measure'] for c in json.load(open(sys.argv[1]))['cells'] if c['id']==sys.argv[2]][0])" "$HERE/registration.json" "$cell")
  cmd="${cmd/--store runs\/theory2/--store $STORE/store}"
  cmd="${cmd/critwin /$CRITWIN }"
  echo "$(date -u +%FT%TZ) $cell: $cmd"
  $cmd --no-progress > "$out.part"
  mv "$out.part" "$out"
  echo "$(date -u +%FT%TZ) $cell: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('edge'), d.get('edge_ci'))" "$out")"
done
