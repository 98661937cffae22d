#!/usr/bin/env bash
# The Alchemy checks S3, S4, S5 under the stone-token variation at cpu size, 3 seeds, one worker, one thread
# (all committed in paper_checks/results, S1-S6). A run takes from ~9 minutes (composition, AVX-512 core) to many hours (decomposition
# at h = 5, 2,163 tokens; costs in README.md). The store lives outside the repository; finished runs are exported
# as small files (runs_stones/: config, metrics rows, summary; no checkpoints or resume states) and rebuilt into
# the store here first. Two of these on one store split the runs between them (each run is claimed).
# After a stretch, `bash stone_checks.sh --save` exports the store's runs into runs_stones/ (commit it).
# Judge and write the committed results once a check's runs are all in (--no-train reads the store only):
#   critwin check S3 --size cpu --seeds 3 --input-format stone_states --store "$STORE/store" --no-train \
#     --results paper_checks/results
# S4's h = 2 runs at task instances 1-2 (task_instances.md) train into the same store with the command there;
# --save exports them too, and this script rebuilds them first like every other exported run. So does S6 under
# stone tokens (s6_stone_tokens.md: 26 runs, ~25 minutes on one AVX-512 core):
#   critwin check S6 --size cpu --seeds 2 --freeze-points 4 --input-format stone_states --store "$STORE/store" \
#     --workers 1 --no-progress --results "$STORE/results"
# Usage: STORE=runs/alchemy_stones bash stone_checks.sh [CHECK ...]   (default: S3 S4 S5)
#        STORE=runs/alchemy_stones bash stone_checks.sh --save
set -euo pipefail
STORE="${STORE:-runs/alchemy_stones}"
HERE="$(cd "$(dirname "$0")" && pwd)"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$STORE/store"
if [ "${1:-}" = --save ]; then
  # the store's runs as small files (runs_stones/: metrics rows, configs, summaries; no checkpoints or states)
  python3 "$HERE/export_runs.py" "$STORE/store" --into runs_stones
  exit 0
fi
# the finished runs, rebuilt from their export (runs_stones/)
python3 -c "import sys; from critwin.paper_checks.run_export import rebuild_store; rebuild_store(sys.argv[1], sys.argv[2])" "$HERE/runs_stones" "$STORE/store"
for check in "${@:-S3 S4 S5}"; do
  critwin check $check --size cpu --seeds 3 --input-format stone_states --store "$STORE/store" \
    --results "$STORE/results" --workers 1 --no-progress
done
