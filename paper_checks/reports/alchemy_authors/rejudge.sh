#!/usr/bin/env bash
# Re-judge every Alchemy check that times stages from the exported runs, without training: the long run and S6's
# frozen branches at the authors' recipe (runs_authors/), the stone-token runs of S3-S6 (runs_stones/). A store is
# rebuilt from the exports (paper_checks/run_export.py), then each check reads it with --no-train. A stage not
# reached by a run's end is censored at that epoch, of the protocol's 1000 (paper_checks/base.py's rule).
# Usage (from the repository root): bash paper_checks/reports/alchemy_authors/rejudge.sh [RESULTS_DIR]
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
STORE="${STORE:-runs/rejudge}"
OUT="${1:-paper_checks/results}"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
python3 -c "import sys; from critwin.paper_checks.run_export import rebuild_store; rebuild_store(sys.argv[1:3], sys.argv[3])" \
  "$HERE/runs_authors" "$HERE/runs_stones" "$STORE/store"
S="--store $STORE/store --no-train --no-progress --results $OUT"
critwin check S1 --size authors --seeds 1 $S
critwin check S1 --size authors --seeds 2 --in-progress $S         # seed 1 as far as its carried state went
critwin check S6 --size authors --seeds 1 --freeze-points 3 $S
for c in S3 S4 S5; do
  critwin check $c --size cpu --seeds 3 --input-format stone_states $S
done
critwin check S4 --size cpu --seeds 3 --task-seeds 3 --variant 'decomposition h2' --input-format stone_states $S
critwin check S6 --size cpu --seeds 2 --freeze-points 4 --input-format stone_states $S
