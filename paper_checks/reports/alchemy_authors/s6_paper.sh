#!/usr/bin/env bash
# S6 in the paper's form (registered in s6_paper_form.md): each of the embedding and the layers frozen from A's
# completion in the seed's baseline, then every 10 epochs; P(B given A) and P(C given A,B) timed against the
# baseline by the three-in-a-row rule, censored where a run ends first. Resumable: stored runs are skipped, paused
# runs already where their pause leaves them stay, a killed run continues from its resume state. The store lives
# outside the repository (never commit it, a checkpoint or a resume state).
#   PROTOCOL=stone_cpu (default): stone tokens, cpu size, 100 epochs, 3 seeds, freeze at t_A + 0..70
#     (3 probes, 3 baselines, at most 72 branches; 0.033 s a step on one thread of a busy AMD EPYC 2-core host;
#     baselines pause once both later stages complete and branches once each is decided, so the cost depends on
#     when the baselines complete them: --dry-run prints the bound on the planned branches' steps)
#   PROTOCOL=authors: the authors' recipe, 1000 epochs, 3 seeds, embedding and 4 layers frozen at t_A + 0..240
#     (3 probes, 3 baselines, at most 375 branches: a GPU job, DEVICE=cuda)
#   PROTOCOL=quick: a test size, never a result (quick preset, 128 chemistries, 9 epochs, 1 seed, freeze at
#     t_A + 0, 2): every part of the training path in under a minute of one CPU
# Usage: STORE=runs/s6_paper [PROTOCOL=stone_cpu] [WORKERS=1] [DEVICE=cpu] bash s6_paper.sh [--dry-run | --no-train]
set -euo pipefail
STORE="${STORE:-runs/s6_paper}"
PROTOCOL="${PROTOCOL:-stone_cpu}"
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
mkdir -p "$STORE/store"
exec critwin check S6 --paper-form "$PROTOCOL" --size "$([ "$PROTOCOL" = authors ] && echo authors || echo cpu)" \
  --store "$STORE/store" --results "$STORE/results" --workers "${WORKERS:-1}" --device "${DEVICE:-cpu}" \
  --no-progress "$@"
