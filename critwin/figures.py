"""Matplotlib figures (PNG) for theory, runs and their comparison; every function writes one file."""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLORS = {"recipe": "tab:blue", "recipe_run": "tab:purple", "reduced": "tab:orange", "full": "tab:green",
          "memorization": "tab:red", "composition": "tab:brown", "survival": "tab:brown"}


def _save(fig, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _shade(ax, windows):
    for k, (a, b, v) in enumerate(windows):
        ax.axvspan(a, b, color="0.85", zorder=0, label=f"decay window (lambda={v:g})" if k == 0 else None)


def plot_schedule(steps, traj: dict, windows, path, title: str = "") -> Path:
    """m(t), r(t) (spec order parameters) and explained fractions x, rho, window shaded."""
    panels = [("x", "rho")] if "m" not in traj else [("m", "r"), ("x", "rho")]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 3.8), squeeze=False)
    labels = {"m": "m = mean |M_ij|_F", "r": "r = |W1|_F |W2|_F",
              "x": "x: target explained by memorization", "rho": "rho: target explained by reasoning"}
    for ax, names in zip(axes[0], panels):
        _shade(ax, windows)
        for n in names:
            ax.plot(steps, traj[n], label=labels[n])
        ax.set_xlabel("optimizer step")
        ax.legend(fontsize=8)
    axes[0][0].set_title(title, fontsize=9)
    return _save(fig, path)


def plot_windows(grid: dict, rows: list[dict], path, title: str = "") -> Path:
    """Predicted delta-window edges vs gamma for each method in `grid`; onset windows as bars.

    grid[method] = (gamma, t1, t2) arrays; rows = prediction rows (onset windows drawn).
    """
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for method, (g, t1, t2) in grid.items():
        c = COLORS.get(method, "k")
        ax.plot(g, t1, "--", color=c, label=f"{method}: t1 (memorization)")
        ax.plot(g, t2, "-", color=c, label=f"{method}: t2 (reasoning)")
        ax.fill_between(g, t1, t2, where=np.asarray(t2) > np.asarray(t1), color=c, alpha=0.12)
    for r in rows:
        lo, hi = r.get("onset_first"), r.get("onset_last")
        if lo is not None and np.isfinite(lo):
            ax.plot([r["gamma"]] * 2, [max(lo, 1), max(hi, 1)], "o-", lw=3,
                    color=COLORS.get(r["method"], "k"), alpha=0.7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks([t for t in (0.1, 0.2, 0.5, 1, 2, 5) if g.min() <= t <= g.max()] or [float(g.min())])
    ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
    ax.set_xlabel("init scale gamma")
    ax.set_ylabel("optimizer steps")
    ax.set_title(title or "Predicted critical window (bars: onset windows)", fontsize=9)
    ax.legend(fontsize=7)
    return _save(fig, path)


def plot_compare(steps, out: dict, windows, path, title: str = "") -> Path:
    """Explained fractions x and rho: reduced equations (dashed) over the full flow (solid)."""
    fig, ax = plt.subplots(figsize=(6.5, 4))
    _shade(ax, windows)
    for k, c in (("x", "tab:red"), ("rho", "tab:blue")):
        ax.plot(steps, out[f"{k}_full"], "-", color=c, label=f"{k} full flow")
        ax.plot(steps, out[f"{k}_reduced"], "--", color=c, label=f"{k} reduced")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("fraction of the target explained")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_onset_comparison(rows: list[dict], path, metric: str = "OOD accuracy") -> Path:
    """Final outcome vs window onset (mean +- sd over seeds) with predicted windows drawn."""
    fig, axes = plt.subplots(1, len(rows), figsize=(6 * len(rows), 4), squeeze=False)
    for ax, r in zip(axes[0], rows):
        c = r["curve"]
        on, mu, sd = map(np.asarray, (c["onsets"], c["mean"], c["sd"]))
        ax.errorbar(on, mu, yerr=sd, fmt="o-", color="k", capsize=3, label=f"observed ({c['seeds']} seeds)")
        ax.axhline(c["threshold"], color="0.5", ls=":", lw=1,
                   label=c.get("threshold_label", f"threshold {c['threshold']:g}"))
        if c.get("observed_window"):
            lo, hi = c["observed_window"]
            inside = (on >= lo) & (on <= hi)
            ax.plot(on[inside], mu[inside], "o", ms=13, mfc="none", mec="tab:green", mew=2,
                    label=f"observed window: onsets {lo:,.0f}-{hi:,.0f} beat no decay")
        for m, col in COLORS.items():
            if f"{m}_t1" in r and np.isfinite(r[f"{m}_t1"]):
                lo, t2 = r[f"{m}_t1"], r[f"{m}_t2"]
                hi = min(t2, r["steps"] - r["width"])
                if not np.isfinite(t2):
                    ax.axvline(lo, color=col, ls="-.", label=f"{m}: left edge at {lo:,.0f}")
                elif t2 <= lo:
                    ax.axvline(lo, color=col, ls="--", label=f"{m}: no window (t2={t2:,.0f} before t1={lo:,.0f})")
                elif hi > lo:
                    ax.axvspan(lo, hi, color=col, alpha=0.15, label=f"{m} window [{lo:,.0f}, {t2:,.0f}]")
                else:
                    ax.axvline(lo, color=col, ls=":", label=f"{m} window [{lo:,.0f}, {t2:,.0f}] starts after the last onset")
        ax.set_xlabel("window onset (step)")
        ax.set_ylabel(f"final {metric}")
        ax.set_title(textwrap.fill(f"gamma={r['gamma']:g}, width {r['width']:,.0f}, lambda {r['wd']:g}"
                                   + (f", decay reading {r['reading']}" if r.get("reading") else ""), 70), fontsize=9)
        ax.legend(fontsize=7)
    return _save(fig, path)


def plot_law_fits(results: list[dict], path, quantity: str) -> Path:
    """Observed time vs gamma (mean +- sd) with each law's fitted prediction; fit points ringed."""
    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4), squeeze=False)
    for ax, res in zip(axes[0], results):
        rows = res["rows"]
        g = np.array([r["gamma"] for r in rows])
        obs, sd = np.array([r["observed"] for r in rows]), np.array([r["sd"] for r in rows])
        ax.errorbar(g, obs, yerr=sd, fmt="o", color="k", capsize=3, label="observed", zorder=3)
        fit = np.array([r["role"] == "fit" for r in rows])
        ax.plot(g[fit], obs[fit], "o", ms=13, mfc="none", mec="tab:red", label="fitted at")
        for law, col in zip(res["scores"], ("0.5", "tab:blue", "tab:orange")):
            err = res["scores"][law]["mean_abs_log_error"]
            cg, cv = (res["curves"]["gamma"], res["curves"][law]) if "curves" in res else \
                (g, [r[f"pred {law}"] for r in rows])
            ax.plot(cg, cv, "-", color=col, label=f"{law} (held-out |ln err| {err:.2f})")
        ax.set_xlabel("init scale gamma")
        ax.set_ylabel(f"{quantity} time (steps)")
        ax.set_title(" / ".join(res["group"]), fontsize=9)
        ax.legend(fontsize=7)
    return _save(fig, path)


def _paper_interval(paper):
    if isinstance(paper, (list, tuple)) and len(paper) == 2:
        return float(paper[0]), float(paper[1])
    if isinstance(paper, (int, float)) and not isinstance(paper, bool):
        return float(paper), float(paper)
    if isinstance(paper, str) and paper.count("-") == 1:       # "200-500"
        try:
            lo, hi = (float(x) for x in paper.split("-"))
            return lo, hi
        except ValueError:
            return None
    return None


def plot_check(result: dict, path) -> Path:
    """Measured (mean +- sd, per-seed dots) next to the paper's value or range, one row per
    compared value; one panel per quantity: values on a 0-1 scale, rows that name their own
    `unit` (e.g. a count), and the check's metric (log axis where every value is positive)."""
    rows = [r for r in result["rows"] if isinstance(r.get("measured"), (int, float))]
    def small(r):
        vals = [abs(v) for v in (r["measured"], *(_paper_interval(r["paper"]) or ())) if np.isfinite(v)]
        return bool(vals) and max(vals) <= 1.5         # a row not yet measured stays with the check's metric
    def panel(r):
        return r.get("unit") or ("0-1 scale" if small(r) else result.get("metric", "value"))
    names = list(dict.fromkeys(panel(r) for r in rows))
    groups = [[r for r in rows if panel(r) == n] for n in names]
    fig, axes = plt.subplots(1, max(len(groups), 1), figsize=(6.5 * max(len(groups), 1), 1.2 + 0.32 * len(rows)),
                             squeeze=False)
    for ax, name, grp in zip(axes[0], names, groups):
        y = np.arange(len(grp))[::-1]
        for yi, r in zip(y, grp):
            p = _paper_interval(r["paper"])
            if p:
                ax.plot(p, [yi, yi], "-|", color="tab:red", lw=6, alpha=0.5, ms=12,
                        label="paper" if yi == y[0] else None)
            ax.errorbar(r["measured"], yi, xerr=r.get("sd", 0) or 0, fmt="o", color="k", capsize=3,
                        label="measured (mean +- sd)" if yi == y[0] else None)
            seeds = [v for v in r.get("per_seed", []) if v is not None and np.isfinite(v)]
            ax.plot(seeds, [yi] * len(seeds), ".", color="0.5", ms=4)
        ax.set_yticks(y)
        ax.set_yticklabels([r["value"] for r in grp], fontsize=7)
        xs = [r["measured"] for r in grp] + [v for r in grp for v in (_paper_interval(r["paper"]) or ())]
        if name == result.get("metric", "value") and all(np.isfinite(x) and x > 0 for x in xs):
            ax.set_xscale("log")
        ax.set_xlabel(name, fontsize=8)
        ax.legend(fontsize=7, loc="best")
    fig.suptitle(textwrap.fill(f"{result['id']}: {result['verdict']}", 110), fontsize=8)
    return _save(fig, path)


def plot_readings(res, path, paper: dict) -> Path:
    """One panel per decay reading: final OOD per row (paper value or range in red, each run a
    dot coloured by task instance, the mean a black bar); the panel title carries the score.
    paper: (claim, variant) -> the paper's value or range."""
    readings = list(dict.fromkeys(res.per_run.reading))
    keys = list(dict.fromkeys(zip(res.per_run.claim, res.per_run.variant)))
    fig, axes = plt.subplots(1, len(readings), figsize=(3.6 * len(readings) + 1.5, 0.9 + 0.34 * len(keys)),
                             squeeze=False, sharey=True)
    rank = res.ranking.set_index(["reading", "hypothesis"])
    tasks = sorted(res.per_run.task_seed.unique())
    cmap = plt.get_cmap("tab10")
    y = {k: i for i, k in enumerate(keys[::-1])}
    for ax, reading in zip(axes[0], readings):
        sub = res.per_run[res.per_run.reading == reading]
        for (cid, variant), yi in y.items():
            p = _paper_interval(paper[(cid, variant)])
            if p:
                ax.plot(p, [yi, yi], "-|", color="tab:red", lw=6, alpha=0.45, ms=10,
                        label="paper" if yi == len(keys) - 1 else None)
            g = sub[(sub.claim == cid) & (sub.variant == variant)]
            for t in tasks:
                v = g[g.task_seed == t].measured.dropna()
                ax.plot(v, [yi + 0.12 * (t - (len(tasks) - 1) / 2)] * len(v), "o", ms=4, color=cmap(t % 10),
                        alpha=0.8, label=f"task instance {t}" if yi == len(keys) - 1 else None)
            if g.measured.notna().any():
                ax.plot([g.measured.mean()] * 2, [yi - 0.3, yi + 0.3], "k-", lw=2,
                        label="mean" if yi == len(keys) - 1 else None)
        s = rank.loc[(reading, "as measured")] if (reading, "as measured") in rank.index else None
        ax.set_title(reading + (f"\nscore {s['score']:.3f}, {int(s['within'])} of {int(s['common_rows'])} rows within"
                                if s is not None else ""), fontsize=8)
        ax.set_xlim(-0.03, 1.03)
        ax.set_xlabel("final OOD accuracy")
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(list(y.values()))
    axes[0][0].set_yticklabels([f"{c} {v}" for c, v in y], fontsize=7)
    axes[0][-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return _save(fig, path)


def plot_phase(pm, path) -> Path:
    """One panel per gamma: final OOD vs window onset, one line per decay value (runs as faint
    dots), the no-decay level dashed, the recipe's t1 / t2 and each method's predicted onset
    window (per decay value) drawn on the onset axis."""
    g = pm.grid.scaled()
    gammas = sorted(pm.cells.gamma.unique()) if len(pm.cells) else list(g.gammas)
    fig, axes = plt.subplots(1, len(gammas), figsize=(4.6 * len(gammas), 4.0), squeeze=False, sharey=True)
    cmap = plt.get_cmap("viridis")
    lams = sorted(pm.cells.wd.unique()) if len(pm.cells) else []
    for ax, gamma in zip(axes[0], gammas):
        for i, lam in enumerate(lams):
            c = cmap(i / max(1, len(lams) - 1))
            cell = pm.cells[(pm.cells.gamma == gamma) & (pm.cells.wd == lam)].sort_values("onset")
            ax.plot(cell.onset, cell["mean"], "o-", color=c, label=f"lambda {lam:g}")
            runs = pm.per_run[(pm.per_run.gamma == gamma) & (pm.per_run.wd == lam)]
            ax.plot(runs.onset, runs.ood, ".", color=c, alpha=0.3, ms=4)
            if len(pm.predicted):
                p = pm.predicted[(pm.predicted.gamma == gamma) & (pm.predicted.wd == lam)
                                 & pm.predicted.onset_first.notna()]
                for _, r in p.iterrows():
                    ax.plot([r.onset_first, r.onset_last], [1.02 + 0.02 * i] * 2, "-", color=c, lw=3, alpha=0.7)
        base = pm.per_run[(pm.per_run.gamma == gamma) & pm.per_run.wd.isna()].ood.mean()
        if np.isfinite(base):
            ax.axhline(base, ls="--", color="0.4", label="no decay")
        if len(pm.predicted):
            rec = pm.predicted[(pm.predicted.gamma == gamma) & (pm.predicted.method == "recipe")]
            for col, ls, name in (("t1", ":", "recipe t1"), ("t2", "-.", "recipe t2")):
                if len(rec) and np.isfinite(rec[col].iloc[0]) and rec[col].iloc[0] <= g.steps:
                    ax.axvline(rec[col].iloc[0], color="tab:red", ls=ls, label=name)
        ax.set_xscale("symlog", linthresh=max(1, g.steps // 200))
        ax.set_xlim(0, g.steps - g.width + 1)
        ax.set_xlabel("window onset (step)")
        ax.set_title(f"gamma {gamma:g}", fontsize=9)
        ax.set_ylim(-0.02, 1.1)
    axes[0][0].set_ylabel("final OOD accuracy")
    axes[0][-1].legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.suptitle(f"reading {pm.grid.reading.label}, window width {g.width}\nbars at the top: predicted onset"
                 " window per lambda (gradient flow)", fontsize=8)
    return _save(fig, path)


def plot_regimes(m: dict, paper_budgets: dict, path) -> Path:
    """The reduced model's onset dependence (range of the final reasoning fraction over
    onsets) over G / mu_m x decay budget, regimes written in the cells, the setting marked."""
    g, b, rng = m["gain_ratios"], m["budgets"], m["onset_range"]
    fig, ax = plt.subplots(figsize=(6.8, 5.2))
    mesh = ax.pcolormesh(b, g, rng, shading="nearest", cmap="viridis", vmin=0, vmax=max(0.05, float(rng.max())))
    fig.colorbar(mesh, ax=ax, label="range of final reasoning fraction over onsets")
    short = {"none": "", "uniform": "u", "graded": "g", "window": "W"}
    for i, gi in enumerate(g):
        for j, bj in enumerate(b):
            ax.text(bj, gi, short[m["regime"][i, j]], ha="center", va="center", color="w", fontsize=8)
    for (name, budget), mk in zip(paper_budgets.items(), ("o", "s")):
        ax.plot([budget], [m["setting"]["gain_ratio"]], mk, mfc="none", mec="tab:red", ms=12, mew=2,
                label=f"this setting, {name}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("decay budget lambda * width (flow time)")
    ax.set_ylabel("escape gain G / mu_m")
    ax.set_title("regimes of the reduced model (W: window, g: graded, u: uniform, blank: none)", fontsize=8)
    ax.legend(fontsize=7, loc="lower left")
    return _save(fig, path)


def plot_stage_times(res: dict, path) -> Path:
    """Observed stage step against predicted flow time (log-log), one marker per stage, with
    the fitted timescale factor as a line."""
    fig, ax = plt.subplots(figsize=(5, 4.2))
    marks = {"A": "o", "B": "s", "C": "^"}
    for k, m in marks.items():
        pts = [(p["predicted"], p["observed"]) for p in res["pairs"] if p["stage"] == k]
        if pts:
            ax.scatter(*zip(*pts), marker=m, label=f"stage {k}")
    if "steps_per_flow_time" in res:
        x = np.array([min(p["predicted"] for p in res["pairs"]), max(p["predicted"] for p in res["pairs"])])
        ax.plot(x, res["steps_per_flow_time"] * x, "k--", lw=1,
                label=f"{res['steps_per_flow_time']:.3g} steps per flow time (rho {res['spearman']:.2f})")
    ax.set(xscale="log", yscale="log", xlabel="predicted (linear readout, flow time)", ylabel="observed (step)",
           title="Alchemy stage times")
    ax.legend(fontsize=8)
    return _save(fig, path)


def plot_stage_curves(curves, per_run, path, max_panels: int = 12) -> Path:
    """One panel per condition: each event curve averaged over the condition's runs (log steps),
    and a dashed line at its median stage time over the runs that reach it."""
    import pandas as pd
    from critwin.table import condition_columns
    keys = [c for c in condition_columns(per_run) if c not in ("stage_step", "rises", "dip_step", "dip_depth")]
    first = per_run.drop_duplicates("run_id").set_index("run_id")[keys]
    def text(v):
        return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)
    cond = pd.Series([" ".join(f"{k}={text(v)}" for k, v in zip(keys, row) if v is not None and text(v) not in ("none", "nan"))
                      for row in first.itertuples(index=False)], index=first.index)
    curves = curves.assign(condition=curves.run_id.map(cond))
    per_run = per_run.assign(condition=per_run.run_id.map(cond))
    names = list(pd.unique(cond))[:max_panels]
    cols = min(3, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.4 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        for i, (metric, g) in enumerate(curves[curves.condition == name].groupby("metric")):
            mean = g.groupby("step").value.mean()
            ax.plot(np.maximum(mean.index.to_numpy(), 1), mean.values, color=f"C{i}", label=metric)
            t = per_run[(per_run.condition == name) & (per_run.metric == metric)].stage_step.dropna()
            if len(t):
                ax.axvline(max(1.0, float(t.median())), color=f"C{i}", ls="--", lw=1)
        ax.set(xscale="log", ylim=(-0.02, 1.02), xlabel="step", title="\n".join(textwrap.wrap(name, 55)))
        ax.title.set_fontsize(7)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    return _save(fig, path)


def plot_plasticity(table, delay: float, path) -> Path:
    """Top: mean stage delay against the freeze step, one panel per stage curve and one line per
    component; the baseline's stage time (dotted) and the window threshold (grey). Bottom (when
    the table has it): the curve's final value against the freeze step, the baseline's dashed."""
    metrics = list(dict.fromkeys(table.metric))
    finals = "final_mean" in table and "baseline_final" in table
    fig, axes = plt.subplots(1 + finals, len(metrics), figsize=(4.6 * len(metrics), 3.6 * (1 + finals)),
                             squeeze=False)
    for j, metric in enumerate(metrics):
        sub, ax = table[table.metric == metric], axes[0, j]
        for i, (comp, g) in enumerate(sub.groupby("component", sort=False)):
            ax.plot(g.freeze_step, g.delta_mean, "o-", color=f"C{i}", label=comp)
            if np.isfinite(g.baseline_stage.iloc[0]):
                ax.axvline(g.baseline_stage.iloc[0], color=f"C{i}", ls=":", lw=1)
            if finals:
                axes[1, j].plot(g.freeze_step, g.final_mean, "o-", color=f"C{i}", label=comp)
        ax.axhline(delay, color="0.6", lw=1)
        ax.set(xlabel="freeze step t_f", ylabel="stage delay (steps)", title=metric)
        if finals:
            axes[1, j].axhline(sub.baseline_final.iloc[0], color="k", ls="--", lw=1, label="baseline")
            axes[1, j].set(xlabel="freeze step t_f", ylabel=f"final {metric}")
            axes[1, j].legend(fontsize=8)
    axes[0, 0].legend(fontsize=8)
    return _save(fig, path)


def plot_predicted_stages(results: list[dict], path) -> Path:
    """The linear readout's held-out event curves over flow time, one panel per task and hop count."""
    cols = min(4, len(results))
    rows = -(-len(results) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.8 * cols, 3.0 * rows), squeeze=False)
    for ax, r in zip(axes.flat, results):
        c = r["curves"]
        for i, (name, col) in enumerate((("A", "event_a"), ("B", "event_b"), ("C", "event_c"), ("P(B|A)", "p_b_given_a"))):
            ax.plot(c.t, c[col], color=f"C{i}", label=name, ls=":" if name == "P(B|A)" else "-")
        ax.set(xscale="log", ylim=(-0.02, 1.02), xlabel="flow time", title=f"{r['task']}: {r['order'] or '-'}")
        ax.title.set_fontsize(8)
    for ax in list(axes.flat)[len(results):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    return _save(fig, path)


def plot_arrival(table, holdout, level: float, path) -> Path:
    """Final OOD against the onset and against the norm ratio (arrival / end), each run a dot
    coloured by gamma, with each feature's threshold fitted at one gamma (dashed)."""
    feats = ("onset", "norm_ratio")
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 3.8))
    for ax, feat in zip(axes, feats):
        for i, (gamma, g) in enumerate(table.groupby("gamma")):
            ax.plot(g[feat], g.final_ood, "o", ms=4, alpha=0.75, color=f"C{i}", label=f"gamma {gamma:g}")
        t = holdout[holdout.feature == feat].threshold
        if len(t) and np.isfinite(t.iloc[0]):
            ax.axvline(t.iloc[0], color="0.3", ls="--", lw=1)
        ax.axhline(level, color="0.6", lw=1)
        if feat == "onset":
            ax.set_xscale("symlog", linthresh=100)
            ax.set_xlim(left=-10)
        ax.set(xlabel=feat.replace("_", " "), ylabel="final OOD accuracy")
    axes[0].legend(fontsize=8)
    axes[1].set_title("arrival norm / norm at the window's end", fontsize=9)
    return _save(fig, path)


def plot_left_edge(curves, table, s_star: float, path) -> Path:
    """Per gamma: the penalty's shrink lambda * adam_gain(t) of the no-decay probes for each
    lambda, the fitted threshold s*, the predicted edges (dots) and the observed brackets (bars)."""
    gammas = sorted(curves.gamma.unique())
    fig, axes = plt.subplots(1, len(gammas), figsize=(4.2 * len(gammas), 3.6), squeeze=False, sharey=True)
    for ax, gamma in zip(axes[0], gammas):
        c = curves[np.isclose(curves.gamma, gamma)]
        rows = table[np.isclose(table.gamma, gamma)]
        for i, r in enumerate(rows.itertuples()):
            ax.plot(c.step, r.wd * c.gain, color=f"C{i}", lw=1.2, label=f"lambda {r.wd:g}")
            if np.isfinite(r.predicted_edge):
                ax.plot([r.predicted_edge], [s_star], "o", color=f"C{i}", ms=6)
            if np.isfinite(r.bracket_lo) or np.isfinite(r.bracket_hi):
                lo = r.bracket_lo if np.isfinite(r.bracket_lo) else 0.0
                hi = r.bracket_hi if np.isfinite(r.bracket_hi) else c.step.max()
                ax.plot([lo, min(hi, c.step.max())], [s_star * 0.8 ** (i + 1)] * 2, color=f"C{i}", lw=4, alpha=0.5)
        ax.axhline(s_star, color="0.3", ls="--", lw=1)
        ax.set_yscale("log")
        ax.set(xlabel="step", title=f"gamma {gamma:g}")
    axes[0][0].set_ylabel("penalty shrink per step (lambda x Adam gain)")
    axes[0][0].legend(fontsize=7)
    return _save(fig, path)


def plot_held_share(curves: dict, rows: list[dict], path, level: float = 0.5) -> Path:
    """Held share of the attention weights the loss grows, per lambda, along each no-decay probe (one panel
    per optimizer x gamma), the level 1/2 and the predicted left edges."""
    keys = list(curves)
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 3.0), sharey=True, squeeze=False)
    for ax, key in zip(axes[0], keys):
        c = curves[key]
        opt, gamma = key.split(" gamma ")
        for row in (r for r in rows if r["optimizer"] == opt and f"{r['gamma']:g}" == gamma):
            lam = row["lambda"]
            line, = ax.plot(c["step"], c[f"attn_{lam:g}"], lw=1.2, label=f"lambda {lam:g}")
            if row["predicted_left_edge"] is not None:
                ax.axvline(row["predicted_left_edge"], color=line.get_color(), ls=":", lw=1)
        ax.axhline(level, color="k", lw=0.8)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("step of the no-decay run")
    axes[0][0].set_ylabel("held share (attention)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle("Onsets after a dotted line: the penalty no longer holds back most of what the loss grows",
                 fontsize=9)
    fig.tight_layout()
    return _save(fig, path)


def plot_demo(plans, outcomes: dict, edge, constant, path, title: str = "") -> Path:
    """The demo: final OOD accuracy of each run by schedule (dots, mean as a bar), with the predicted left edge
    and the constant baseline's edge marked on the onset axis."""
    fig, ax = plt.subplots(figsize=(7, 4))
    for i, (name, onset) in enumerate(plans):
        y = np.asarray(outcomes[name], float)
        x = -150 if onset is None else onset
        ax.scatter(np.full(len(y), x) + np.linspace(-12, 12, len(y)), y, color="k", s=14, zorder=3)
        ax.hlines(y.mean(), x - 30, x + 30, color="tab:blue", lw=3)
    if edge is not None:
        ax.axvline(edge, color="tab:green", ls="--", label=f"predicted left edge {edge:.0f} (held_max)")
    if constant is not None:
        ax.axvline(constant, color="0.5", ls=":", label=f"constant baseline {constant:.0f}")
    ticks = [(-150 if o is None else o) for _, o in plans]
    ax.set_xticks(ticks, ["none" if o is None else str(o) for _, o in plans])
    ax.set_xlabel("window onset (steps)")
    ax.set_ylabel("final OOD accuracy")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=8, loc="center right")
    return _save(fig, path)


def plot_s6_paper(curves: dict, every: float, path, title: str = "") -> Path:
    """The paper-form S6 (paper_checks/s6_paper.curves): one row per seed, one panel per later stage; the baseline
    in black with its completion and completion + `every` epochs dotted, each frozen branch from its freeze point
    coloured by component (solid: the first freeze point, dashed: later ones)."""
    stages = [("p_b_given_a", "P(B given A)"), ("p_c_given_ab", "P(C given A,B)")]
    colours = {"embedding": "tab:blue"}
    seeds = sorted(curves)
    fig, axes = plt.subplots(max(len(seeds), 1), 2, figsize=(10, 2.6 * max(len(seeds), 1)), squeeze=False)
    for row, s in zip(axes, seeds):
        c = curves[s]
        firsts = {comp: min(f for cc, f in c["branches"] if cc == comp) for comp, _ in c["branches"]}
        for ax, (st, name) in zip(row, stages):
            x, y = c["baseline"][st]
            ax.plot(x, y, color="k", lw=1.5, label="baseline")
            t = c["completes"][st]
            if t is not None:
                for v in (t, t + every):
                    ax.axvline(v, color="k", ls=":", lw=0.8)
            for (comp, f), br in sorted(c["branches"].items(), key=lambda kv: (kv[0][0], kv[0][1])):
                col = colours.get(comp) or f"C{1 + int(comp[5:]) if comp.startswith('layer') else 7}"
                bx, by = br[st]
                ax.plot(bx, by, color=col, lw=1, ls="-" if f == firsts[comp] else "--",
                        label=f"{comp} frozen from {f:g}")
            ax.axhline(0.9, color="0.7", lw=0.6)
            ax.set_ylim(0, 1.02)
            ax.set_title(f"seed {s}: {name}" + ("" if t is not None else " (baseline censored)"), fontsize=8)
            ax.set_xlabel("epoch", fontsize=8)
        row[0].legend(fontsize=6, loc="lower right")
    if title:
        fig.suptitle(textwrap.fill(title, 120), fontsize=8)
    return _save(fig, path)


def plot_panel_curves(curves, cells: list[dict], methods, baselines, path, title: str = "") -> Path:
    """A scored panel, one plot per measured cell: the fraction of its runs that compose by window onset (black)
    beside each predictor's mean P(composes) over the same runs (methods solid, baselines dashed grey), the level
    1/2, and the measured edge (mean OOD accuracy's crossing of 0.5) as a dotted line. `curves`:
    bridge.panel.onset_curves; `cells`: bridge.panel.curve_cells."""
    slots = len(cells) + 1                          # the last slot holds the legend
    ncol = min(4, slots)
    nrow = -(-slots // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.1 * ncol, 2.5 * nrow + 0.4), sharey=True, squeeze=False)
    greys = {b: (str(0.35 + 0.2 * k), (0, (4, 2 + k))) for k, b in enumerate(baselines)}
    for ax, cell in zip(axes.flat, cells):
        own = curves[curves["cell"] == cell["id"]]
        pick = lambda n: own[own["name"] == n].sort_values("onset")
        for k, m in enumerate(methods):
            c = pick(m)
            ax.plot(c["onset"], c["value"], color=f"C{k}", lw=1.4, label=f"{m} (mean P)")
        for b in baselines:
            c = pick(b)
            ax.plot(c["onset"], c["value"], color=greys[b][0], ls=greys[b][1], lw=1, label=f"{b} (mean P)")
        c = pick("measured")
        ax.plot(c["onset"], c["value"], color="k", lw=1.8, marker="o", ms=3, label="measured: fraction composing")
        ax.axhline(0.5, color="0.75", lw=0.6)
        if cell["edge"] is not None:
            ax.axvline(cell["edge"], color="k", ls=":", lw=1, label="measured edge (mean OOD acc = 0.5)")
        edge = "no window" if cell["edge"] is None else f"edge {cell['edge']:.0f}"
        part = "" if cell["runs"] >= cell["registered"] else f", {cell['runs']}/{cell['registered']} runs"
        ax.set_title(f"{cell['optimizer']} gamma {cell['gamma']:g} lambda {cell['lambda']:g}: {edge}{part}",
                     fontsize=7.5)
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel("window onset (steps)", fontsize=8)
    for row in axes:
        row[0].set_ylabel("P(composes) / fraction", fontsize=8)
    legend = {}
    for ax in axes.flat[:len(cells)]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(lab, h)
    handles, labels = list(legend.values()), list(legend)
    for ax in axes.flat[len(cells):]:
        ax.axis("off")
    if handles:
        axes.flat[len(cells)].legend(handles, labels, loc="center", fontsize=7, frameon=False)
    if title:
        fig.suptitle(textwrap.fill(title, 140), fontsize=8)
    return _save(fig, path)
