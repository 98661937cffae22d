#!/usr/bin/env bash
# Measure the registered panel (registration.json) in its registered order, after the registration was committed:
# each cell's own `critwin sweep run` (its whole onset curve, 54 runs), its runs in $STORE (outside the repository),
# then its per-run outcomes in measured/<cell id>.csv. Resumable: finished runs are reused, cells with all 54 runs
# skipped, and a cell measured in part on an earlier machine (its CSV in git, its store gone) trains only the runs
# its CSV lacks (missing.py: the fewest Cartesian grids that cover them). `python3 measured.py STORE CELL_ID`
# exports a cell's finished runs at any time (a partial cell is scored per run, not per cell), keeping earlier rows.
# Stopped (Ctrl-C, SIGTERM to its process group, or a failed sweep), it exports the cell in progress as far as it got.
# Usage: STORE=runs/theory3 WORKERS=1 bash paper_checks/reports/theory3/measure.sh [CELL_ID ...]
#   ($MEASURED: write the CSVs to another folder than measured/, as the tests do; $DEVICE=cuda: train on the GPU,
#   a cell in one pack; $DEADLINE, seconds since the epoch: start no cell that would end after it, judged by the
#   longest cell so far; $COPY_TO: copy each CSV written there too, as a lent GPU's $OUT: measure_device.sh;
#   $REGISTRATION: another registration's cells, in its order, e.g. v6/registration.json for its extension cells)
# Then:  critwin bridge score paper_checks/reports/theory3/registration.json paper_checks/reports/theory3/measured
set -euo pipefail
STORE="${STORE:-runs/theory3}"
WORKERS="${WORKERS:-1}"
DEVICE="${DEVICE:-cpu}"
DEADLINE="${DEADLINE:-}"
COPY_TO="${COPY_TO:-}"
CRITWIN="${CRITWIN:-critwin}"
export REGISTRATION="${REGISTRATION:-registration.json}"   # absolute or relative to this folder; missing.py, measured.py read it
PY="${PYTHON:-python3}"
HERE="$(cd "$(dirname "$0")" && pwd)"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
CELLS=("$@")
if [ ${#CELLS[@]} -eq 0 ]; then
  mapfile -t CELLS < <("$PY" -c "import json, sys, pathlib; [print(c['id']) for c in json.loads(
    (pathlib.Path(sys.argv[1]) / sys.argv[2]).read_text())['cells']]" "$HERE" "$REGISTRATION")
fi
current=""
longest=0
export_cell() {         # measured/<cell>.csv from the store (and a copy in $COPY_TO)
  "$PY" "$HERE/measured.py" "$STORE" "$1" || return 1
  if [ -n "$COPY_TO" ]; then cp "${MEASURED:-$HERE/measured}/$1.csv" "$COPY_TO/"; fi
}
export_partial() {      # the cell in progress, as far as its finished runs go (its resume states stay in $STORE)
  if [ -n "$current" ]; then export_cell "$current" || true; fi
}
trap 'export_partial' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for cell in "${CELLS[@]}"; do
  csv="${MEASURED:-$HERE/measured}/$cell.csv"
  if [ -f "$csv" ] && [ "$(($(wc -l < "$csv") - 1))" -ge 54 ]; then
    echo "$cell: measured already"; continue
  fi
  if [ -n "$DEADLINE" ] && [ "$(($(date +%s) + longest))" -gt "$DEADLINE" ]; then
    echo "$(date -u +%FT%TZ) $cell: not started (the longest cell so far, ${longest} s, would end after the deadline)"
    break
  fi
  started=$(date +%s)
  current="$cell"
  mapfile -t cmds < <("$PY" "$HERE/missing.py" "$cell" "$STORE" "$WORKERS" "$DEVICE")
  for cmd in "${cmds[@]}"; do
    cmd="${cmd/critwin /$CRITWIN }"
    echo "$(date -u +%FT%TZ) $cell: $cmd --workers $WORKERS"
    $cmd --workers "$WORKERS" --no-progress
  done
  current=""
  export_cell "$cell"
  took=$(($(date +%s) - started))
  if [ "$took" -gt "$longest" ]; then longest=$took; fi
done
