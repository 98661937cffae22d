"""Handlers of `critwin train ...`: train one run (or return it from the store)."""
from __future__ import annotations

from dataclasses import replace

from critwin.cli.common import add_gamma, add_optimizer, add_reading_args
from critwin.empirical.metrics.stages import StageReached
from critwin.table import format_table
from critwin.empirical import RunStore, TrainConfig, train
from critwin.empirical.config import DEVICES, PRECISIONS
from critwin.empirical.interventions import PLACEMENTS
from critwin.empirical.models import INITS
from critwin.empirical.models.transformer import LAYER_INITS
from critwin.empirical.presets import ALCHEMY_SIZES
from critwin.empirical.sweep.one_run import STORED, train_and_store
from critwin.empirical.loop import Paused
from critwin.empirical.tasks.alchemy import INPUT_FORMATS, QUERY_ENDS
from critwin.empirical.tasks.alchemy_chemistry import HELD_OUT_RULES
from critwin.empirical.tasks.scan import SPLIT_SIZES as SCAN_SPLIT_SIZES
from critwin.errors import ConfigError
from critwin.vocabulary import STORED_READING

VARIANTS = {"permutation": "anchor_permutation", "shift": "anchor_shift"}


def add_training_args(p):
    add_gamma(p, help="init scale (see --init)")
    p.add_argument("--init", choices=INITS, default="multiplier",
                   help="multiplier: std = gamma/sqrt(d_in); exponent: std = d_in^-gamma; pytorch: PyTorch's module"
                        " defaults (the Alchemy authors' code; gamma unused)")
    p.add_argument("--d", type=int, default=64)
    p.add_argument("--heads", type=int, default=2)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--lr", type=float, default=3e-3)
    add_optimizer(p)
    p.add_argument("--momentum", type=float, default=0.9, help="SGD momentum")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr-schedule", choices=("constant", "cosine"), default="constant",
                   help="cosine: lr (1 + cos(pi step / steps)) / 2, per batch")
    p.add_argument("--lr-final", type=float, default=None,
                   help="cosine: the learning rate it ends at (default 0)")
    p.add_argument("--clip", type=float, default=None, help="clip the gradient's global norm to this")
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--wd", type=float, default=None,
                   help="decay lambda: constant, or inside --wd-window (how it acts: --decay-form)")
    add_reading_args(p)
    p.add_argument("--wd-window", nargs="+", action="extend", metavar="START:END", default=None)
    p.add_argument("--budget-placement", choices=PLACEMENTS, default=None)
    p.add_argument("--budget", type=float, default=None, help="lambda * width, e.g. 20")
    p.add_argument("--width", type=float, default=None)
    p.add_argument("--freeze", nargs="+", action="extend", metavar="COMPONENT@STEP", default=None,
                   help="freeze a component from a step: embedding, unembed, final_ln, layerI[.attn|.mlp]")
    p.add_argument("--freeze-second-moment", type=int, default=None, metavar="STEP",
                   help="adamw: hold Adam's second moment from this step on (a mechanism intervention)")
    p.add_argument("--amsgrad", action="store_true",
                   help="adamw: divide by the running max of Adam's second moment, so it never falls (a"
                        " mechanism intervention for the l2 reading)")
    p.add_argument("--freeze-optimizer", choices=("keep", "rebuild"), default="keep",
                   help="at a --freeze step: keep the optimizer's moments for the other parameters, or rebuild"
                        " it over the trainable ones (the Alchemy paper's protocol)")
    p.add_argument("--checkpoints", type=int, nargs="+", default=None, metavar="STEP",
                   help="save the full training state after these steps (other runs can --branch from them)")
    p.add_argument("--branch", default=None, metavar="RUN_ID@STEP",
                   help="start from a stored run's checkpoint (same config up to that step; new freezes or decay"
                        " from it on); the result equals training from step 0")
    p.add_argument("--stop-at", type=int, default=None, metavar="STEP",
                   help="pause at this step with the resume state kept (the run keeps its own steps and"
                        " schedule); the same command without it continues the run")
    p.add_argument("--stop-at-stage", default=None, metavar="[SPLIT:]METRIC",
                   help="pause once the stage of a logged metric completes by the paper's threshold rule (0.95 for"
                        " event_a, else 0.9, three evaluations in a row; split test unless named), e.g. event_a:"
                        " training on cannot move that stage's time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--task-seed", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-max", type=int, default=None, metavar="N",
                   help="score each split on at most N examples (a fixed seeded subset; default all)")
    p.add_argument("--device", choices=DEVICES, default="cpu")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32",
                   help="bf16: the forward and backward passes under bf16 autocast (weights and Adam in fp32); a"
                        " speed option: benchmarks/bench_alchemy.py measures it, compare its curves with fp32")
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads for this run (1: small models are fastest on one thread, and a"
                        " busy machine does not oversubscribe)")
    p.add_argument("--store", default="runs", help="run store folder")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")


def task_keys(args) -> dict:
    """The task options of a training command (None where the command has none or leaves it unset)."""
    return {"hops": getattr(args, "hops", None), "chemistries": getattr(args, "chemistries", None) or None,
            "modulus": getattr(args, "p", None), "train_frac": getattr(args, "train_frac", None),
            "ablation": getattr(args, "ablation", None) or None, "query_end": getattr(args, "query_end", None),
            "input_format": getattr(args, "input_format", None), "held_out": getattr(args, "held_out", None)}


def config_from_args(args, task: str) -> TrainConfig:
    """The flat sweep keys, from command-line options (one grid point)."""
    flat = {"task": task, "task_seed": args.task_seed, "d": args.d, "heads": args.heads,
            "layers": args.layers, "init": args.init, "gamma": args.gamma, "head_bias": args.head_bias,
            **({"layer_init": args.layer_init} if getattr(args, "layer_init", None) else {}),
            **({"betas": tuple(args.betas)} if getattr(args, "betas", None) else {}),
            "decay_form": args.decay_form, "decay_set": args.decay_set, "optimizer": args.optimizer,
            "freeze_second_moment": args.freeze_second_moment, "amsgrad": args.amsgrad, **task_keys(args),
            "lr": args.lr, "momentum": args.momentum, "batch_size": args.batch_size, "steps": args.steps,
            "lr_schedule": args.lr_schedule, **({"lr_final": args.lr_final} if args.lr_final is not None else {}),
            "clip": args.clip, "dropout": args.dropout,
            "wd": args.wd, "wd_window": args.wd_window, "budget_placement": args.budget_placement,
            "budget": args.budget, "width": args.width, "freeze": args.freeze, "seed": args.seed,
            "eval_every": args.eval_every, "eval_max": args.eval_max, "device": args.device,
            "precision": args.precision, "checkpoints": tuple(args.checkpoints or ()),
            "freeze_optimizer": args.freeze_optimizer,
            "branch": args.branch}
    if args.budget_placement is not None and args.wd_window:
        raise ConfigError("budget_placement", args.budget_placement, "either --wd-window or --budget-placement")
    return TrainConfig.from_flat(flat)


def cmd_anchor(args):
    return train_one(args, config_from_args(args, VARIANTS[args.variant]))


def cmd_modarith(args):
    return train_one(args, config_from_args(args, "modarith"))


def cmd_scan(args):
    return train_one(args, config_from_args(args, f"scan_{args.split}"))


# Alchemy is not the anchor paper: its runs keep the stored reading where no preset sets one
ALCHEMY_FALLBACKS = {"decay_form": STORED_READING["decay_form"], "decay_set": STORED_READING["decay_set"], "init": "multiplier",
                     "layer_init": "independent"}


def cmd_alchemy(args):
    return train_one(args, alchemy_config(args))


def alchemy_config(args) -> TrainConfig:
    """The run config of a `train alchemy` command: its options over its size's preset."""
    from dataclasses import fields

    from critwin.empirical.models import ModelConfig
    from critwin.empirical.presets import steps_per_epoch
    task = f"alchemy_{args.task}"
    if args.task != "withheld" and args.hops is None:
        raise ConfigError("hops", None, f"2, 3, 4 or 5 for {args.task}")
    preset = ALCHEMY_SIZES[args.size]      # options left unset on the command line take these values
    for k, v in preset.items():
        if getattr(args, k, None) is None and k in vars(args):
            setattr(args, k, v)
    for k, v in ALCHEMY_FALLBACKS.items():  # options no preset sets
        if getattr(args, k) is None:
            setattr(args, k, v)
    args.head_bias = bool(args.head_bias)

    def epochs_to_steps(epochs: int) -> int:
        return epochs * steps_per_epoch({"task": task, "task_seed": args.task_seed, "batch_size": args.batch_size,
                                         **task_keys(args)})
    if args.epochs is not None:
        if args.epochs < 1:
            raise ConfigError("epochs", args.epochs, "a positive number of passes over the training set")
        if args.steps is not None and args.steps != preset.get("steps"):
            raise ConfigError("steps", args.steps, "not together with --epochs")
        args.steps = epochs_to_steps(args.epochs)
    elif args.steps is None:
        raise ConfigError("epochs", None, f"a number of epochs (or --steps) for --size {args.size}")
    if args.stop_at_epoch is not None:
        if args.stop_at is not None:
            raise ConfigError("stop_at_epoch", args.stop_at_epoch, "not together with --stop-at")
        if args.stop_at_epoch < 1:
            raise ConfigError("stop_at_epoch", args.stop_at_epoch, "a positive number of passes to pause after")
        args.stop_at = epochs_to_steps(args.stop_at_epoch)
    cfg = config_from_args(args, task)
    model_only = {f.name for f in fields(ModelConfig)} - set(vars(args))     # no command-line option of their own
    extra = {k: v for k, v in preset.items() if k in model_only}
    cfg = cfg.with_model(**extra) if extra else cfg
    train_only = {f.name for f in fields(TrainConfig)} - set(vars(args)) - {"model"}
    rest = {k: v for k, v in preset.items() if k in train_only}
    return replace(cfg, **rest) if rest else cfg


def stage_rule(spec: str | None):
    """--stop-at-stage [SPLIT:]METRIC as the pause rule it names (None: no such pause)."""
    if spec is None:
        return None
    split, _, metric = spec.rpartition(":")
    if not metric:
        raise ConfigError("stop_at_stage", spec, "[SPLIT:]METRIC, e.g. event_a or train:acc")
    return StageReached(metric, split or "test")


def train_one(args, cfg):
    """Train one config into the store (or return it from there: `train_and_store`), one line per outcome."""
    if args.threads < 1:
        raise ConfigError("threads", args.threads, "a number of torch threads >= 1")
    store = RunStore(args.store).ensure_writable()     # before training, not after
    import torch
    torch.set_num_threads(args.threads)
    try:
        run, status = train_and_store(cfg, store, progress=not args.no_progress, trainer=train, until=args.stop_at,
                                      stop_when=stage_rule(args.stop_at_stage))
    except Paused as p:
        rid, where = cfg.run_id(), store.resume_path(cfg.run_id())
        return ({"run_id": rid, "status": "paused", "step": p.step, "steps": p.steps, "resume_state": str(where)},
                f"run {rid} paused at step {p.step} of {p.steps} (stored as paused); its resume state: {where}"
                " (the same command without the pause continues it)")
    run_id, cached = cfg.run_id(), status in STORED
    path = store.path(run_id)
    final = run.summary["final"]
    payload = {"run_id": run_id, "path": str(path), "cached": cached, "status": run.summary["status"],
               "replaced_damaged": status == "corrupt", "final": final, "summary": run.summary, "config": run.config}
    keys = [k for k in ("train_acc", "ood_acc", "id_test_acc", "ood_symmetric_rate", "test_acc", "test_event_a",
                        "test_event_b", "test_event_c", "train_seq_acc", "test_seq_acc", "test_token_acc",
                        "weight_norm") if k in final]
    how = "already in the store" if cached else run.summary["status"] + (
        "; replaced a damaged folder" if status == "corrupt" else "")
    text = [f"run {run_id} ({how}): {path}", format_table([{k: final[k] for k in keys}]),
            f"{run.summary['seconds_per_step'] * 1000:.2f} ms/step, {run.summary['wall_seconds']:.1f} s"]
    return payload, "\n".join(text)


def register(sub):
    p = sub.add_parser("anchor", help="train on an anchor-function task",
                       description="Train the Transformer on the permutation or shift anchor task.")
    p.add_argument("--variant", choices=tuple(VARIANTS), default="permutation")
    add_training_args(p)
    p.set_defaults(handler=cmd_anchor)

    p = sub.add_parser("modarith", help="train on modular addition (a + b) mod p (the grokking control)",
                       description="Train on (a + b) mod p; the summary's test_reach_step is the grokking step"
                                   " (first evaluation with test accuracy >= 0.95; empty when never).")
    p.add_argument("--p", type=int, default=67, help="the modulus")
    p.add_argument("--train-frac", type=float, default=0.4, help="fraction of the p^2 pairs trained")
    add_training_args(p)
    p.set_defaults(handler=cmd_modarith)

    p = sub.add_parser("scan", help="train the sequence model on a SCAN split (the unreachable-composition control)",
                       description="A decoder-only model reads 'command <sep>' and writes the actions then <eos>"
                                   " (teacher forcing); every evaluation decodes greedily, all rows at once, and"
                                   " logs sequence accuracy (seq_acc) and token accuracy (token_acc) per split.")
    p.add_argument("--split", choices=tuple(SCAN_SPLIT_SIZES), default="add_prim_jump",
                   help="add_prim_jump (the paper's control) or length (train <= 22 actions, test 24-48)")
    add_training_args(p)
    p.set_defaults(handler=cmd_scan)

    p = sub.add_parser("alchemy", help="train on an Alchemy latent-structure task",
                       description="Train the Transformer on the withheld-pair, composition or decomposition task;"
                                   " every evaluation logs events A, B, C, P(B|A), P(C|A,B) on held-out chemistries.")
    p.add_argument("--task", choices=("withheld", "composition", "decomposition"), default="withheld")
    p.add_argument("--hops", type=int, default=None, help="composition / decomposition: path length 2..5")
    p.add_argument("--ablation", action="store_true",
                   help="also evaluate held-out queries with the query's reward token / every reward token hidden")
    p.add_argument("--chemistries", type=int, default=None,
                   help="chemistries per split at most (of 1,371 training / 165 held-out; default: the size's"
                        " preset, else all); 0 = all")
    p.add_argument("--size", choices=tuple(ALCHEMY_SIZES), default="cpu",
                   help="quick: a tiny model on 8 chemistries (machinery only); cpu: the anchor Transformer (d 64,"
                        " 2 layers) at lr 1e-3, batch 32 (not yet tuned to show the stages); paper: the paper's model (4 layers, d 256, 4 heads, FFN 512, post-LN,"
                        " sinusoidal positions, dropout 0.1) with AdamW 1e-4, cosine, clip 1.0, batch 32 (a GPU"
                        " budget); authors: the paper's model trained as the authors' code runs it (PyTorch's default"
                        " init with cloned layers, betas 0.9 0.999, AdamW decay 0.001 on every parameter, constant lr"
                        " 1e-4, the query ending at its potion; empirical/presets.py); authors_tiny: that recipe on"
                        " their smallest encoder (2 layers, d 128, FFN 256). Options given on the command"
                        " line override the preset.")
    p.add_argument("--epochs", type=int, default=None, help="passes over the training set (sets --steps)")
    p.add_argument("--stop-at-epoch", type=int, default=None, metavar="E",
                   help="pause after E epochs (--stop-at in epochs): the run keeps its --epochs and schedule")
    p.add_argument("--layer-init", choices=LAYER_INITS, default=None,
                   help="independent: each layer drawn on its own; cloned: every layer starts as a copy of the"
                        " first (the authors' nn.TransformerEncoder). Default: the size's preset")
    p.add_argument("--betas", type=float, nargs=2, default=None, metavar=("B1", "B2"),
                   help="Adam's betas (default: the size's preset, else 0.9 0.98; the authors' code: 0.9 0.999)")
    p.add_argument("--split", dest="held_out", choices=HELD_OUT_RULES, default=None,
                   help="which chemistries are held out: toolkit (our seeded 165, default) or authors (the rule of"
                        " the authors' code: their 165, of which 20 are ours)")
    p.add_argument("--input-format", choices=INPUT_FORMATS, default=None,
                   help="tokens: 4 per stone (default); stone_states: one token per stone with its reward bound in"
                        " (a variation the authors' code supports)")
    p.add_argument("--query-end", choices=QUERY_ENDS, default=None,
                   help="io: the query closed by <io> (the toolkit); potion: it ends at its potion (the authors'"
                        " code). Default: the size's preset, else io")
    add_training_args(p)
    p.set_defaults(handler=cmd_alchemy, **{k: None for k in ("lr", "batch_size", "steps", "d", "heads", "layers",
                                                             "gamma", "lr_schedule", "clip", "dropout", "eval_every",
                                                             "head_bias", "decay_form", "decay_set", "init")})
