#!/usr/bin/env bash
# The long Alchemy run at the authors' recipe: withheld task, the paper's model, seed SEED (default 0),
# 150 epochs, a checkpoint every 10 epochs, a resume state every 5 minutes, one torch thread.
# Run it again (same arguments) to continue from the store's resume state after a stop. The store lives outside
# the repository (checkpoints and resume states are never committed); seed 0 finished, so on a new machine it is
# rebuilt from its export (runs_authors/: rows, config, summary) and the command below trains nothing.
# Its run is S1's at --size authors (and S6's baseline), so the checks read it:
#   critwin check S1 --size authors --seeds 1 --store "$STORE" --no-train
# SIZE=authors_tiny trains the authors' smallest encoder under the same recipe.
# PRECISION=bf16 trains the forward and backward passes under bf16 autocast (a run of its own); unset, the
# command is the fp32 one, so the long run keeps its id.
# Usage: STORE=runs/alchemy_authors [SIZE=authors_tiny] [PRECISION=bf16] bash train_long.sh [SEED]
set -euo pipefail
STORE="${STORE:-runs/alchemy_authors}"
SEED="${1:-0}"
SIZE="${SIZE:-authors}"
PRECISION="${PRECISION:-}"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
HERE="$(cd "$(dirname "$0")" && pwd)"
if [ "$SIZE${PRECISION:+-$PRECISION}-$SEED" = authors-0 ]; then
  # the long run, seed 0, finished: rebuilt from its export, so the command below trains nothing
  python3 -c "import sys; from critwin.paper_checks.run_export import rebuild_store; rebuild_store(sys.argv[1], sys.argv[2], sources={'carry'})" "$HERE/runs_authors" "$STORE/store" || true
fi
exec critwin train alchemy --task withheld --size "$SIZE" --epochs 150 --seed "$SEED" \
  --checkpoints 3430 6860 10290 13720 17150 20580 24010 27440 30870 34300 37730 41160 44590 48020 \
  --store "$STORE/store" --threads 1 ${PRECISION:+--precision "$PRECISION"}
