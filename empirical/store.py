"""The run store: one folder per run, named by the hash of its resolved config.

A run folder holds config.json, summary.json, environment.json and metrics.parquet
(tidy: step, split, metric, value). It is written under a temporary name and renamed
into place, so a run is either complete or absent; anything else found in the store is
reported as corrupt, never silently read; a damaged folder is replaced by the next save
of the same run. Before training a run, a process claims it (a claim file holding its host
and pid), so concurrent sweeps on one store split the work; a dead process's claims and
temporary folders are stale and are taken over or removed.
"""
from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import shutil
import socket
import time
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from critwin.empirical.config import (
    ADDED_DEFAULTS,
    ADDED_MODEL_DEFAULTS,
    TrainConfig,
)

from critwin.errors import ConfigError, CorruptRunError
from critwin.vocabulary import reading_label

FILES = ("config.json", "summary.json", "environment.json", "metrics.parquet")
CHECKPOINTS = "checkpoints"     # optional folder: step_N.pt, the training state after step N
TMP_PREFIX = ".tmp-"
CLAIM_PREFIX = ".claim-"
RESUME_PREFIX = ".resume-"   # the training state a run in progress last wrote (train(resume=...)); gone once stored
PACK_RESUME_PREFIX = ".pack-resume-"   # the same for a pack (train_pack(resume=...)), named by its members
CLAIM_TTL = 24 * 3600   # seconds a claim from another host is honoured (its pid cannot be checked)
CLAIM_GRACE = 5.0       # seconds after which an empty or unreadable claim file is stale (claims are written whole)


@dataclass
class Run:
    config: dict          # TrainConfig.resolved()
    metrics: pd.DataFrame  # step, split, metric, value
    summary: dict
    environment: dict
    checkpoints: dict = field(default_factory=dict, repr=False)   # step -> serialized training state

    @property
    def run_id(self) -> str:
        return TrainConfig.from_dict(self.config).run_id()

    @property
    def steps_done(self) -> int:
        """The steps trained (a paused run's pause step; else its last evaluation's)."""
        return int(self.summary.get("steps_done", self.metrics.step.max()))


def write_atomic(path: Path, blob: bytes) -> None:
    """Write `blob` to `path` so that a reader finds the old file or the new one, never half of one."""
    tmp = path.with_name(f"{path.name}.tmp-p{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:       # a full disk or a kill mid-write leaves no temporary file behind
        tmp.unlink(missing_ok=True)
        raise


def _write_json(path: Path, obj) -> None:
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True, allow_nan=True)
        f.flush()
        os.fsync(f.fileno())


class RunStore:
    """Folder-backed store: save(run), load(run_id), complete ids, corrupt folders."""

    def __init__(self, root):
        self.root = Path(root).absolute()     # absolute: workers elsewhere (Dask, another cwd) write the same files

    def path(self, run_id: str) -> Path:
        return self.root / run_id

    def has(self, run_id: str) -> bool:
        return self.path(run_id).is_dir()

    def require(self) -> "RunStore":
        """For readers: the store must be an existing folder."""
        if not self.root.is_dir():
            what = "a file" if self.root.exists() else "nothing"
            raise ConfigError("store", str(self.root), f"an existing run store folder ({what} is there)")
        return self

    def ensure_writable(self) -> "RunStore":
        """For writers, before any training: create the folder and check a run can be written."""
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError("store", str(self.root), "a folder for the runs (this path is a file)")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f"{TMP_PREFIX}probe-p{os.getpid()}-{uuid.uuid4().hex[:8]}"
            probe.mkdir()
            probe.rmdir()
        except OSError as e:
            raise ConfigError("store", str(self.root), f"a writable folder ({e.strerror or e})") from None
        return self

    def save(self, run: Run, replace: bool = False) -> Path:
        """Write atomically. An existing complete run with the same id is kept as it is, unless
        `replace` (used to retry failed runs); a damaged folder is always replaced. Either way
        the new folder is swapped in by renames, so readers never see a half-written run."""
        run_id = run.run_id
        final = self.path(run_id)
        if final.is_dir() and not replace and self.status(run_id) != "corrupt":
            return final
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / f"{TMP_PREFIX}{run_id}-p{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        current = tmp       # the file being written (named by an OSError that does not name it)
        try:
            for name, obj in (("config.json", run.config), ("summary.json", run.summary),
                              ("environment.json", run.environment)):
                current = tmp / name
                _write_json(current, obj)
            current = tmp / "metrics.parquet"
            run.metrics.to_parquet(current, index=False)
            if run.checkpoints:
                (tmp / CHECKPOINTS).mkdir()
                for step, blob in run.checkpoints.items():
                    current = tmp / CHECKPOINTS / f"step_{int(step)}.pt"
                    current.write_bytes(blob)
            if final.is_dir():
                old = self.root / f"{TMP_PREFIX}old-{run_id}-p{os.getpid()}-{uuid.uuid4().hex[:8]}"
                os.rename(final, old)
                os.rename(tmp, final)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(tmp, final)
        except OSError as e:
            shutil.rmtree(tmp, ignore_errors=True)
            if final.is_dir():      # another writer finished the same run first
                return final
            if e.filename is None or str(e.filename).startswith(str(tmp)):    # named as the run's own file
                e.filename = str(final / Path(e.filename or current).relative_to(tmp))
            raise
        return final

    def status(self, run_id: str) -> str | None:
        """'complete', 'failed', 'diverged', 'paused' (trained part of the way: a pause's, with its
        resume state beside it); 'corrupt' for a folder that cannot be read back
        whole (a missing or truncated file); None when the run is not stored."""
        path = self.path(run_id)
        if not path.is_dir():
            return None
        try:
            return read_run(path).summary.get("status", "corrupt")
        except CorruptRunError:
            return "corrupt"

    def complete(self, run_id: str) -> Run | None:
        """The run if it is stored, readable and complete; None otherwise (one read)."""
        try:
            run = read_run(self.path(run_id))
        except CorruptRunError:
            return None
        return run if run.summary.get("status") == "complete" else None

    # claims ----------------------------------------------------------------
    def _claim_path(self, run_id: str) -> Path:
        return self.root / f"{CLAIM_PREFIX}{run_id}"

    def claim(self, run_id: str) -> bool:
        """Claim a run before training it. False when another live process holds the claim;
        a claim of a dead process (or one older than CLAIM_TTL from another host) is taken over, and
        so is a claim file left empty or unreadable for over CLAIM_GRACE seconds (a writer killed
        mid-write, or a full disk), with a warning. The claim is written whole under a temporary
        name and linked into place, so no reader ever finds it half-written; a write that fails
        (a full disk) raises OSError and leaves no file behind."""
        path = self._claim_path(run_id)
        me = {"host": socket.gethostname(), "pid": os.getpid(), "time": time.time()}
        for _ in range(3):
            try:
                _link_new(path, json.dumps(me).encode())
            except FileExistsError:
                holder = _read_claim(path)
                if holder is None:
                    age = _age(path)
                    if age is None or age < CLAIM_GRACE:      # vanished, or being replaced: look again
                        time.sleep(0.01)
                        continue
                    warnings.warn(f"taking over the claim file {path}: {_unreadable_claim(path)} for {age:.0f} s"
                                  " (its writer died before writing it)")
                elif (holder.get("host"), holder.get("pid")) != (me["host"], me["pid"]) and _claim_live(path, holder):
                    return False
                try:
                    os.unlink(path)         # stale (or ours from before): take it over
                except FileNotFoundError:
                    pass
                continue
            return True
        return False

    def holder(self, run_id: str) -> str | None:
        """'host:pid' of the live process that holds `run_id`'s claim (None: none does)."""
        path = self._claim_path(run_id)
        h = _read_claim(path)
        return f"{h.get('host')}:{h.get('pid')}" if h and _claim_live(path, h) else None

    def bad_claims(self) -> list[tuple[Path, str]]:
        """(claim file, what is wrong) of claims left empty or unreadable for over CLAIM_GRACE
        seconds: no process holds them; training takes them over, `remove_litter` deletes them."""
        if not self.root.is_dir():
            return []
        out = []
        for p in sorted(self.root.glob(f"{CLAIM_PREFIX}*")):
            if ".tmp-p" in p.name or _read_claim(p) is not None:
                continue
            age = _age(p)
            if age is not None and age >= CLAIM_GRACE:
                out.append((p, f"claim file {_unreadable_claim(p)} for {age:.0f} s (training takes it over)"))
        return out

    def release(self, run_id: str) -> None:
        """Drop this process's claim on a run (after it is saved, or abandoned)."""
        path = self._claim_path(run_id)
        holder = _read_claim(path)
        if holder and (holder.get("host"), holder.get("pid")) == (socket.gethostname(), os.getpid()):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def claimed_by_others(self) -> list[str]:
        """Run ids that another live process is training now."""
        if not self.root.is_dir():
            return []
        out = []
        for p in self.root.glob(f"{CLAIM_PREFIX}*"):
            holder = None if ".tmp-p" in p.name else _read_claim(p)
            if holder and holder.get("pid") != os.getpid() and _claim_live(p, holder):
                out.append(p.name[len(CLAIM_PREFIX):])
        return out

    def clean_stale(self) -> list[Path]:
        """Remove temporary folders and claims left by writers that are no longer running."""
        removed = []
        if not self.root.is_dir():
            return removed
        for p in self.root.glob(f"{TMP_PREFIX}*"):
            if _tmp_owner_alive(p):
                continue
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
        for p in self.root.glob(f"{CLAIM_PREFIX}*"):
            holder = None if ".tmp-p" in p.name else _read_claim(p)
            if holder is not None and not _claim_live(p, holder):
                try:
                    os.unlink(p)
                    removed.append(p)
                except FileNotFoundError:
                    pass
        for p in self._dead_partial_files():
            p.unlink(missing_ok=True)
            removed.append(p)
        return removed

    def _dead_partial_files(self) -> list[Path]:
        """Half-written files (write_atomic's NAME.tmp-pPID) whose writer no longer runs."""
        out = []
        for p in self.root.glob(".*.tmp-p*"):
            pid = p.name.rsplit(".tmp-p", 1)[1]
            if p.is_file() and (not pid.isdigit() or (int(pid) != os.getpid() and not _alive(int(pid)))):
                out.append(p)
        return out

    def litter(self) -> list[tuple[Path, str]]:
        """(file, why) of what no run can use: resume states that cannot be read, and half-written
        files whose writer is gone. Training ignores them; `remove_litter` deletes them."""
        if not self.root.is_dir():
            return []
        import torch
        out = [(p, "half-written file of a writer that is gone") for p in self._dead_partial_files()]
        out += self.bad_claims()
        for p in sorted(self.root.glob(f"{RESUME_PREFIX}*.pt")) + sorted(self.root.glob(f"{PACK_RESUME_PREFIX}*.pt")):
            if self._claim_path(p.name[len(RESUME_PREFIX):-len(".pt")]).exists():
                continue            # a run training now may be writing it
            try:
                state = torch.load(p, map_location="cpu", weights_only=False)
                if p.name.startswith(PACK_RESUME_PREFIX):
                    [TrainConfig.from_dict(c) for c in state["configs"]]
                else:
                    TrainConfig.from_dict(state["config"])
            except Exception as e:  # noqa: BLE001 - anything unreadable is litter
                out.append((p, f"unreadable resume state ({type(e).__name__})"))
        return out

    def remove_litter(self) -> list[Path]:
        """Delete what `litter` finds; the paths removed."""
        gone = [p for p, _ in self.litter()]
        for p in gone:
            p.unlink(missing_ok=True)
        return gone

    def resume_path(self, run_id: str) -> Path:
        """Where a run in progress keeps the state it resumes from after a kill."""
        return self.root / f"{RESUME_PREFIX}{run_id}.pt"

    def drop_resume(self, run_id: str) -> None:
        """Forget a run's resume state (once the run is stored)."""
        self.resume_path(run_id).unlink(missing_ok=True)

    def pack_resume_path(self, run_ids: list[str]) -> Path:
        """Where a pack in progress (its members' run ids, in pack order) keeps its resume state."""
        return self.root / f"{PACK_RESUME_PREFIX}{hashlib.sha256(','.join(run_ids).encode()).hexdigest()[:16]}.pt"

    def pack_resumes(self) -> list[tuple[Path, list[str] | None, dict | None]]:
        """(file, member run ids, state) of each pack resume state: packs killed midway, or
        training now; ids and state are None where the file cannot be read."""
        if not self.root.is_dir():
            return []
        import torch
        out = []
        for path in sorted(self.root.glob(f"{PACK_RESUME_PREFIX}*.pt")):
            try:
                state = torch.load(path, map_location="cpu", weights_only=False)
                out.append((path, [TrainConfig.from_dict(c).run_id() for c in state["configs"]], state))
            except Exception:  # noqa: BLE001 - reported by in_progress, ignored by training
                out.append((path, None, None))
        return out

    def in_progress(self) -> list[dict]:
        """Runs claimed by a live process or with a resume state: who trains them, how far the
        last saved state got (step, of steps, its age in seconds, training seconds so far, the
        last logged metrics, and 'paused' when its folder is stored paused). A resume state without
        a live claim is a paused run, or a killed one that the next sweep of its config continues."""
        if not self.root.is_dir():
            return []
        import torch
        ids = {p.name[len(CLAIM_PREFIX):] for p in self.root.glob(f"{CLAIM_PREFIX}*") if ".tmp-p" not in p.name}
        bad = {p.name[len(CLAIM_PREFIX):]: why for p, why in self.bad_claims()}
        ids |= {p.name[len(RESUME_PREFIX):-len(".pt")] for p in self.root.glob(f"{RESUME_PREFIX}*.pt")}
        in_pack = {}      # run id -> (its pack's state file, the state, its place in the pack)
        out = []
        for path, members, state in self.pack_resumes():
            if members is None:
                out.append({"run_id": path.name, "training": None, "step": None, "steps": None,
                            "saved_seconds_ago": None, "wall_seconds": None, "last": {},
                            "error": "unreadable pack resume state"})
            for e, rid in enumerate(members or []):
                in_pack[rid] = (path, state, e)
        ids |= set(in_pack)
        for rid in sorted(ids):
            claim = self._claim_path(rid)
            holder = _read_claim(claim)
            live = bool(holder) and _claim_live(claim, holder)
            row = {"run_id": rid, "training": f"{holder.get('host')}:{holder.get('pid')}" if live else None,
                   "step": None, "steps": None, "saved_seconds_ago": None, "wall_seconds": None, "last": {},
                   "paused": not live and self.status(rid) == "paused"}
            path = self.resume_path(rid)
            if rid in in_pack:
                path, state, e = in_pack[rid]
                row.update(step=int(state["step"]), steps=int(state["configs"][e]["steps"]),
                           saved_seconds_ago=time.time() - path.stat().st_mtime,
                           wall_seconds=float(state["wall"]), last=dict(state["members"][e]["last"]),
                           pack=f"{path.name} ({len(state['configs'])} members)")
            elif path.is_file():
                try:
                    state = torch.load(path, map_location="cpu", weights_only=False)
                    row.update(step=int(state["step"]), steps=int(state["config"]["steps"]),
                               saved_seconds_ago=time.time() - path.stat().st_mtime,
                               wall_seconds=float(state.get("wall", float("nan"))), last=dict(state.get("last", {})))
                except Exception as e:  # noqa: BLE001 - a damaged state is reported, and ignored by training
                    row["error"] = f"unreadable resume state ({type(e).__name__})"
            if rid in bad:
                row["claim"] = bad[rid]
            if live or path.is_file() or rid in bad:
                out.append(row)
        return out

    def partial(self, run_id: str) -> tuple[pd.DataFrame, int, int] | None:
        """(metrics so far, step, of steps) of a run still training or killed midway, read from its
        resume state (its own, or its pack's); None when it has none or the state cannot be read."""
        import torch
        candidates = [(self.resume_path(run_id), None)]
        candidates += [(p, members.index(run_id)) for p, members, _ in self.pack_resumes()
                       if members and run_id in members]
        for path, e in candidates:
            if not path.is_file():
                continue
            try:
                state = torch.load(path, map_location="cpu", weights_only=False)
                rows, steps = ((state["rows"], state["config"]["steps"]) if e is None else
                               (state["members"][e]["rows"], state["configs"][e]["steps"]))
            except Exception:  # noqa: BLE001 - a damaged state reads as no state (in_progress reports it)
                continue
            return pd.DataFrame(rows, columns=["step", "split", "metric", "value"]), int(state["step"]), int(steps)
        return None

    def so_far(self, run_id: str) -> tuple[pd.DataFrame, int, int, str] | None:
        """(metrics, steps trained, of steps, status) of a run as far as it got: its folder when stored
        complete; else the further on of its paused folder ('paused') and its resume state (a run in
        training or killed midway, 'in progress'); None when it has none of these."""
        status = self.status(run_id)
        run = self.load(run_id) if status in ("complete", "paused") else None
        if run is not None and status == "complete":
            return run.metrics, run.steps_done, int(run.config["steps"]), status
        part = self.partial(run_id)
        if run is not None and (part is None or part[1] <= run.steps_done):
            return run.metrics, run.steps_done, int(run.config["steps"]), "paused"
        return None if part is None else (*part, "in progress")

    def checkpoint_steps(self, run_id: str) -> list[int]:
        """The steps after which `run_id` stored a checkpoint: in its folder once stored (without
        reading them), else those its resume state holds while it trains."""
        folder = self.path(run_id) / CHECKPOINTS
        if folder.is_dir():
            return sorted(int(p.stem.split("_")[1]) for p in folder.glob("step_*.pt"))
        return sorted(int(k) for k in self._training_checkpoints(run_id))

    def checkpoint(self, run_id: str, step: int) -> dict:
        """The training state `run_id` saved after `step` (its config's `checkpoints`): from its
        folder, or from its resume state while it trains (so a branch need not wait for the end)."""
        import torch
        path = self.path(run_id) / CHECKPOINTS / f"step_{int(step)}.pt"
        if not path.is_file():
            blob = self._training_checkpoints(run_id).get(int(step))
            if blob is None:
                raise ConfigError("branch", f"{run_id}@{step}", f"a stored checkpoint of a run in {self.root}"
                                                               f" (that run has {self.checkpoint_steps(run_id) or 'none'})")
            return torch.load(io.BytesIO(blob), map_location="cpu", weights_only=False)
        try:
            return torch.load(path, map_location="cpu", weights_only=False)
        except Exception as e:  # noqa: BLE001 - an unreadable checkpoint is damage
            raise CorruptRunError(self.path(run_id), f"checkpoint {path.name} unreadable ({e})") from None

    def _training_checkpoints(self, run_id: str) -> dict:
        """{step: serialized state} that the resume state of a run still training holds ({} if none)."""
        import torch
        path = self.resume_path(run_id)
        if not path.is_file():
            return {}
        try:
            return {int(k): v for k, v in torch.load(path, map_location="cpu", weights_only=False)
                    .get("checkpoints", {}).items()}
        except Exception:  # noqa: BLE001 - a damaged state reads as no state (in_progress reports it)
            return {}

    def load(self, run_id: str) -> Run:
        return read_run(self.path(run_id))

    def scan(self) -> tuple[list[str], list[CorruptRunError]]:
        """(complete run ids, problems): leftover temporary folders count as problems."""
        ok, bad = [], []
        if not self.root.is_dir():
            return ok, bad
        for p in sorted(self.root.iterdir()):
            if not p.is_dir():
                continue
            if p.name.startswith(TMP_PREFIX):
                if not _tmp_owner_alive(p):     # a live writer's folder is work in progress, not damage
                    bad.append(CorruptRunError(p, "half-written (a temporary folder left by an interrupted save)"))
                continue
            try:
                check_run(p)
                ok.append(p.name)
            except CorruptRunError as e:
                bad.append(e)
        return ok, bad


def _tmp_owner_alive(p: Path) -> bool:
    """Whether the process that named this temporary folder (…-p<pid>-…) still runs."""
    parts = p.name.split("-")
    pid = next((int(x[1:]) for x in parts[2:] if x[:1] == "p" and x[1:].isdigit()), None)
    return pid is not None and pid != os.getpid() and _alive(pid)


def _read_claim(path: Path) -> dict | None:
    try:
        got = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return got if isinstance(got, dict) else None


def _unreadable_claim(path: Path) -> str:
    try:
        return "empty" if path.stat().st_size == 0 else "unreadable"
    except OSError:
        return "unreadable"


def _age(path: Path) -> float | None:
    """Seconds since `path` was last written (None: it is gone)."""
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except OSError:
        return None


def _link_new(path: Path, blob: bytes) -> None:
    """Create `path` holding `blob`, whole or not at all: written to a temporary file, then linked
    into place (FileExistsError when `path` exists). On a file system without hard links it is
    created exclusively and written, removed again if the write fails."""
    tmp = path.with_name(f"{path.name}.tmp-p{os.getpid()}")      # NAME.tmp-pPID: litter once its writer is gone
    try:
        with open(tmp, "wb") as f:
            f.write(blob)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
            return
        except FileExistsError:
            raise
        except OSError as e:
            if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
                raise
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            path.unlink(missing_ok=True)
            raise
    except OSError as e:            # a full disk: name the claim that did not fit
        if e.filename is None or str(e.filename) == str(tmp):
            e.filename = str(path)
        raise
    finally:
        tmp.unlink(missing_ok=True)


def _claim_live(path: Path, holder: dict) -> bool:
    if holder.get("host") == socket.gethostname():
        return isinstance(holder.get("pid"), int) and _alive(holder["pid"])
    try:
        return time.time() - path.stat().st_mtime < CLAIM_TTL
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_run(path: Path) -> None:
    missing = [f for f in FILES if not (path / f).is_file()]
    if missing:
        raise CorruptRunError(path, "missing " + ", ".join(missing))


def read_run(path) -> Run:
    path = Path(path)
    check_run(path)
    try:
        config = json.loads((path / "config.json").read_text())
        summary = json.loads((path / "summary.json").read_text())
        env = json.loads((path / "environment.json").read_text())
        metrics = pd.read_parquet(path / "metrics.parquet")
    except (ValueError, OSError) as e:
        raise CorruptRunError(path, f"unreadable ({type(e).__name__}: {e})") from None
    try:
        run_id = TrainConfig.from_dict(config).run_id()
    except Exception as e:  # noqa: BLE001 - any failure to rebuild the config is corruption
        raise CorruptRunError(path, f"config.json is not a valid TrainConfig ({e})") from None
    if run_id != path.name:
        raise CorruptRunError(path, f"config hash {run_id} does not match the folder name")
    if list(metrics.columns) != ["step", "split", "metric", "value"]:
        raise CorruptRunError(path, f"metrics.parquet has columns {list(metrics.columns)}")
    return Run(config, metrics, summary, env)


def config_columns(config: dict) -> dict:
    """A resolved config as the flat columns of load_runs / load_summaries (model fields, reading, window)."""
    config = {**ADDED_DEFAULTS, **config}          # runs stored before a field existed had its default
    out = {k: v for k, v in config.items() if not isinstance(v, (list, dict))}
    out.update({**ADDED_MODEL_DEFAULTS, **config["model"]})
    out["reading"] = reading_label(out["decay_form"], out["decay_set"], out["head_bias"])
    wins = config["wd_windows"]
    out["wd_window_start"] = wins[0][0] if len(wins) == 1 else None
    out["wd_width"] = wins[0][1] - wins[0][0] if len(wins) == 1 else None
    out["wd_value"] = wins[0][2] if len(wins) == 1 else None
    out["wd_windows"] = ";".join(f"{a:g}:{b:g}@{v:g}" for a, b, v in config["wd_windows"]) or "none"
    out["freeze"] = ";".join(f"{c}@{s}" for c, s in config["freeze"]) or "none"
    out["betas"] = ",".join(f"{b:g}" for b in config["betas"])
    return out


def _collect(path, on_corrupt: str):
    if on_corrupt not in ("raise", "skip"):
        raise ValueError("on_corrupt must be 'raise' or 'skip'")
    store = RunStore(path)
    ids, bad = store.scan()
    if bad:
        msg = "; ".join(str(b) for b in bad)
        if on_corrupt == "raise":
            raise CorruptRunError(path, f"{len(bad)} bad run folder(s): {msg}")
        warnings.warn(f"skipped {len(bad)} bad run folder(s): {msg}", stacklevel=3)
    runs = []
    for rid in ids:
        try:
            runs.append((rid, store.load(rid)))
        except CorruptRunError as e:
            if on_corrupt == "raise":
                raise
            warnings.warn(f"skipped: {e}", stacklevel=3)
    return runs


def load_runs(path, on_corrupt: str = "raise") -> pd.DataFrame:
    """Every logged metric of every run in the store as one tidy DataFrame.

    Columns: run_id, the flattened config fields, step, split, metric, value.
    """
    frames = []
    for rid, run in _collect(path, on_corrupt):
        m = run.metrics.copy()
        for k, v in config_columns(run.config).items():
            m[k] = v
        m.insert(0, "run_id", rid)
        frames.append(m)
    if not frames:
        return pd.DataFrame(columns=["run_id", "step", "split", "metric", "value"])
    return pd.concat(frames, ignore_index=True)


def load_summaries(path, on_corrupt: str = "raise") -> pd.DataFrame:
    """One row per run: run_id, config fields, final_* metrics and run status."""
    rows = [{"run_id": rid, **config_columns(run.config),
             **{k: v for k, v in run.summary.items() if not isinstance(v, (dict, list))},
             **{f"final_{k}": v for k, v in run.summary.get("final", {}).items()}}
            for rid, run in _collect(path, on_corrupt)]
    return pd.DataFrame(rows)
