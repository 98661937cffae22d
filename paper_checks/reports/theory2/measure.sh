#!/usr/bin/env bash
# Measure the registered cells (registration.json) in order, after the registration was committed: each cell's
# own `critwin sweep edge` command, its runs in $STORE/store, its result in measured/<cell id>.json.
# Cells already measured are skipped; a stopped bisection continues from the runs already stored
# (copy store_carry/ into the store first: finished runs travel with the repository, ~0.1 MB each).
# Usage: STORE=runs/theory2 bash measure.sh [CELL_ID ...]     (default: every scorable cell, registered order)
#        STORE=runs/theory2 bash measure.sh --carry            (before stopping: finished runs and the running
#                                                               pack's resume state into store_carry/, to commit)
# Then: critwin bridge score paper_checks/reports/theory2/registration.json paper_checks/reports/theory2/measured
set -euo pipefail
STORE="${STORE:-runs/theory2}"
CRITWIN="${CRITWIN:-critwin}"
HERE="$(cd "$(dirname "$0")" && pwd)"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$STORE/store" "$HERE/measured" "$HERE/store_carry"
cp -rn "$HERE/store_carry/." "$STORE/store/" 2>/dev/null || true
carry() {
  for run in "$STORE"/store/*/; do
    [ -f "$run/summary.json" ] && cp -rn "$run" "$HERE/store_carry/" 2>/dev/null || true
  done
  rm -f "$HERE"/store_carry/.pack-resume-*.pt
  cp "$STORE"/store/.pack-resume-*.pt "$HERE/store_carry/" 2>/dev/null || true
}
if [ "${1:-}" = "--carry" ]; then carry; exit 0; fi
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
  carry
  echo "$(date -u +%FT%TZ) $cell: $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(d.get('edge'), d.get('edge_ci'))" "$out")"
done
