"""`critwin bridge fit`: each rate law fitted at one gamma, the held-out gammas predicted."""
from __future__ import annotations

from critwin import figures
from critwin.bridge.observed import QUANTITIES
from critwin.cli.common import add_store_args, attach_figure, figure_args, on_corrupt, reader
from critwin.table import format_table


def register(sub):
    p = sub.add_parser("fit", help="fit each rate law at one gamma, predict the held-out gammas")
    add_store_args(p)
    p.add_argument("--quantity", choices=QUANTITIES,
                   default="reasoning", help="observed time to fit (see critwin.bridge.observed.observed_times)")
    p.add_argument("--fit-gamma", type=float, default=0.8, help="the gamma whose runs fix each law's prefactor")
    p.add_argument("--mem-level", type=float, default=0.9)
    p.add_argument("--ood-level", type=float, default=0.5)
    p.add_argument("--threshold", type=float, default=0.5, help="final OOD level defining observed windows")
    figure_args(p, "bridge_fit_QUANTITY.png")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_fit)


def cmd_fit(args):
    from critwin.bridge.fit import fit_columns, fit_store, fit_summary
    results, skipped = fit_store(reader(args), args.quantity, args.fit_gamma, mem_level=args.mem_level,
                                 ood_level=args.ood_level, threshold=args.threshold, on_corrupt=on_corrupt(args))
    text = list(skipped)
    for res in results:
        text += [" / ".join(res["group"]), format_table(res["rows"], fit_columns(res)), fit_summary(res), ""]
    if not results:
        text.append(f"no group of {args.quantity} times with the fit gamma and another gamma in {args.store}")
    payload = {"quantity": args.quantity, "fit_gamma": args.fit_gamma, "results": results}
    if args.quantity == "reasoning":
        from critwin.bridge.observed import decay_budget_at_rise
        budget = decay_budget_at_rise(args.store, args.ood_level, on_corrupt(args)).to_dict(orient="records")
        payload["decay_budget"] = budget
        text += ["cumulative decay at the OOD rise (budget = lr * lambda * rise steps, mean over runs that rose):",
                 format_table(budget), ""]
    if results:
        attach_figure(args, f"bridge_fit_{args.quantity}.png",
                      lambda path: figures.plot_law_fits(results, path, args.quantity), payload, text)
    return payload, "\n".join(text)
