#!/usr/bin/env bash
# Measure the registered panel (registration.json) in its registered order, after the registration was committed:
# each cell's own `critwin sweep run` (its whole onset curve, 54 runs), its runs in $STORE (outside the repository),
# then its per-run outcomes in measured/<cell id>.csv. Resumable: finished runs are reused, cells with all 54 runs
# skipped, and a cell measured in part on an earlier machine (its CSV in git, its store gone) trains only the runs
# its CSV lacks (missing.py: the fewest Cartesian grids that cover them). `python3 measured.py STORE CELL_ID`
# exports a cell's finished runs at any time (a partial cell is scored per run, not per cell), keeping earlier rows.
# Usage: STORE=runs/theory3 WORKERS=1 bash paper_checks/reports/theory3/measure.sh [CELL_ID ...]
# Then:  critwin bridge score paper_checks/reports/theory3/registration.json paper_checks/reports/theory3/measured
set -euo pipefail
STORE="${STORE:-runs/theory3}"
WORKERS="${WORKERS:-1}"
CRITWIN="${CRITWIN:-critwin}"
PY="${PYTHON:-python3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
CELLS=("$@")
if [ ${#CELLS[@]} -eq 0 ]; then
  mapfile -t CELLS < <("$PY" -c "import json,sys; [print(c['id']) for c in json.load(open(sys.argv[1]))['cells']]" "$HERE/registration.json")
fi
for cell in "${CELLS[@]}"; do
  if [ -f "$HERE/measured/$cell.csv" ] && [ "$(($(wc -l < "$HERE/measured/$cell.csv") - 1))" -ge 54 ]; then
    echo "$cell: measured already"; continue
  fi
  mapfile -t cmds < <("$PY" "$HERE/missing.py" "$cell" "$STORE")
  for cmd in "${cmds[@]}"; do
    cmd="${cmd/critwin /$CRITWIN }"
    echo "$(date -u +%FT%TZ) $cell: $cmd --workers $WORKERS"
    $cmd --workers "$WORKERS" --no-progress
  done
  "$PY" "$HERE/measured.py" "$STORE" "$cell"
done
