#!/usr/bin/env bash
# The Alchemy checks S3, S4, S5 under the stone-token variation at cpu size, 3 seeds, one worker, one thread
# (S1 and S2 are committed). Each run takes ~8-15 minutes on a busy core, so the 36 runs span several machines:
# finished runs are carried in the repository (stone_store/, ~30 KB each: config, metrics, summary) and put
# back into the store here first; after a stretch, copy the store's finished runs into stone_store/ and commit.
# Judge and write the committed results once a check's runs are all in (--no-train reads the store only):
#   critwin check S3 --size cpu --seeds 3 --input-format stone_states --store "$STORE/store" --no-train \
#     --results paper_checks/results
# Usage: STORE=runs/alchemy_stones bash stone_checks.sh [CHECK ...]   (default: S3 S4 S5)
set -euo pipefail
STORE="${STORE:-runs/alchemy_stones}"
HERE="$(cd "$(dirname "$0")" && pwd)"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$STORE/store"
if [ -d "$HERE/stone_store" ]; then
  for run in "$HERE"/stone_store/*/; do
    [ -d "$STORE/store/$(basename "$run")" ] || cp -r "$run" "$STORE/store/"
  done
fi
for check in "${@:-S3 S4 S5}"; do
  critwin check $check --size cpu --seeds 3 --input-format stone_states --store "$STORE/store" \
    --results "$STORE/results" --workers 1 --no-progress
done
