#!/usr/bin/env bash
# S6 (plasticity by freezing) at the authors' recipe on the CPU, registered in s6_authors.md: each component
# frozen from the long run's checkpoints at epochs 10, 80 and 140, each frozen run paused once event A completes
# or at epoch 80. It shares the long run's store (outside the repository): the branches start from the long run's
# checkpoints there, which are never committed, so a new branch needs `train_long.sh 0` trained again first.
# One worker (WORKERS=2: two processes, for a machine whose second core is free), one thread each; a branch from
# epoch 10 takes 14,000-24,000 steps (4-8 hours on one core). `bash s6_authors.sh --save` exports the store's
# runs as small files (runs_authors/: rows, configs, summaries; commit them), and this script rebuilds the settled
# runs from them before it judges. `pkill -TERM -f "critwin check S6"` stops with every run's state written.
# Usage: STORE=runs/alchemy_authors [WORKERS=2] bash s6_authors.sh   # train what is left, then judge
#        STORE=runs/alchemy_authors bash s6_authors.sh --save   # export the store's runs
set -euo pipefail
STORE="${STORE:-runs/alchemy_authors}"
HERE="$(cd "$(dirname "$0")" && pwd)"
SOURCE=4fd235a0283b7550          # the long run, seed 0 (train_long.sh 0)
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$STORE/store"
if [ "${1:-}" = --save ]; then
  python3 "$HERE/export_runs.py" "$STORE/store"     # every run of the store into runs_authors/
  exit 0
fi
# the long run and the frozen branches, rebuilt from their export (runs_authors/: rows, configs, summaries); the
# branches are settled, so the check trains nothing (a new branch would need the long run's checkpoints, which
# are not kept: train_long.sh 0 makes them again)
python3 -c "import sys; from critwin.paper_checks.run_export import rebuild_store; rebuild_store(sys.argv[1], sys.argv[2], sources={'carry', 's6_store', 'store'})" "$HERE/runs_authors" "$STORE/store"
# the check trains a baseline it finds neither stored nor in training: here that is the long run, for hours
python3 - "$STORE/store" "$SOURCE" <<'PY' || exit 2
import sys
from critwin.empirical import RunStore
store, rid = RunStore(sys.argv[1]), sys.argv[2]
if store.status(rid) != "complete" and not any(r["run_id"] == rid and r["training"] for r in store.in_progress()):
    sys.exit(f"s6_authors.sh: the long run {rid} is neither complete nor training: start train_long.sh 0 first")
PY
exec critwin check S6 --size authors --seeds 1 --freeze-points 3 --store "$STORE/store" --workers "${WORKERS:-1}" \
  --results "$STORE/results" --no-progress
