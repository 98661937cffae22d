#!/usr/bin/env bash
# The long Alchemy run at the authors' recipe: withheld task, the paper's model, seed SEED (default 0),
# 150 epochs, a checkpoint every 10 epochs, a resume state every 5 minutes, one torch thread.
# Run it again (same arguments) to continue from the resume state after a stop. On a new machine it first
# takes the state carried in the repository (carry.py restore), unless the store's own is further on;
# after a stretch of training, `python3 carry.py save "$STORE/store"` and commit carry/ to carry it on.
# Seed N > 0 (SIZE=authors, fp32) is carried in carry_seedN/: `python3 carry.py save "$STORE/store" --run-id ID
# --dir carry_seedN`, its id printed by `critwin train` and named by its resume state.
# Its run is S1's at --size authors (and S6's baseline), so the checks read it:
#   critwin check S1 --size authors --seeds 1 --store "$STORE" --no-train
# SIZE=authors_tiny trains the authors' smallest encoder under the same recipe (carried in carry_tiny/).
# PRECISION=bf16 trains the forward and backward passes under bf16 autocast (a run of its own, carried in
# carry_bf16/ for seed 0); unset, the command is the fp32 one, so the long run keeps its id.
# Usage: STORE=runs/alchemy_authors [SIZE=authors_tiny] [PRECISION=bf16] bash train_long.sh [SEED]
set -euo pipefail
STORE="${STORE:-runs/alchemy_authors}"
SEED="${1:-0}"
SIZE="${SIZE:-authors}"
PRECISION="${PRECISION:-}"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
HERE="$(cd "$(dirname "$0")" && pwd)"
case "$SIZE${PRECISION:+-$PRECISION}-$SEED" in
  authors-0) CARRY="$HERE/carry" ;;
  authors-*) CARRY="$HERE/carry_seed$SEED" ;;   # another seed of the long run: its own folder
  authors_tiny-0) CARRY="$HERE/carry_tiny" ;;
  authors-bf16-0) CARRY="$HERE/carry_bf16" ;;
  *) CARRY="" ;;
esac
if [ "$SIZE${PRECISION:+-$PRECISION}-$SEED" = authors-0 ] && [ ! -f "$CARRY/manifest.json" ]; then
  # the long run, seed 0, finished: rebuilt from its export (runs_authors/), so the command below trains nothing
  python3 -c "import sys; from critwin.paper_checks.run_export import rebuild_store; rebuild_store(sys.argv[1], sys.argv[2], sources={'carry'})" "$HERE/runs_authors" "$STORE/store" || true
elif [ -n "$CARRY" ] && [ -f "$CARRY/manifest.json" ]; then
  python3 "$HERE/carry.py" restore "$STORE/store" --dir "$CARRY" \
    --run-id "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['run_id'])" "$CARRY/manifest.json")" || true
fi
exec critwin train alchemy --task withheld --size "$SIZE" --epochs 150 --seed "$SEED" \
  --checkpoints 3430 6860 10290 13720 17150 20580 24010 27440 30870 34300 37730 41160 44590 48020 \
  --store "$STORE/store" --threads 1 ${PRECISION:+--precision "$PRECISION"}
