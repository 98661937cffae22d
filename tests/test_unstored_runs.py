"""A disk that fills while `critwin train` trains (a real 600 KB tmpfs, filled from outside once the run
has written its first resume state): every step trains, the run cannot be stored, and the one error line
says so, names the path that failed and where the resume state is; once there is room the same
command continues from that state."""
import os
import subprocess
import sys
import time

from critwin.empirical import RunStore

CRITWIN = [sys.executable, "-m", "critwin.cli"]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "CRITWIN_RESUME_SECONDS": "0"}


def test_a_disk_that_fills_during_training_names_the_path_and_the_resume_state(small_disk):
    store = small_disk / "s"
    cmd = CRITWIN + ["train", "anchor", "--d", "16", "--steps", "400", "--batch-size", "32", "--eval-every", "100",
                     "--store", str(store), "--no-progress"]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not list(store.glob(".resume-*.pt")) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.005)
    st = os.statvfs(small_disk)
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * (st.f_bavail * st.f_frsize))        # the disk is full from here on
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    rid = RunStore(store).in_progress()[0]["run_id"]
    state = store / f".resume-{rid}.pt"
    assert last.startswith(f"critwin: error: run {rid} was trained but not stored: No space left on device writing"
                           f" {store / rid}/"), last
    assert f"its resume state {state} holds step " in last and " of 400" in last, last
    step = int(last.split(" holds step ")[1].split()[0])
    filler.unlink()
    again = subprocess.run(cmd + ["--json"], env=ENV, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert RunStore(store).load(rid).summary["resumed_from_step"] == step and not state.exists()
