"""Record a workload on which SGLang's own scheduler crashes, keeping the passes it ran before the crash.

The shared reference tool writes its trace when the driver's last query arrives; when the scheduler
raises (here: the KV allocator out of memory) the engine dies first and nothing is written. This script
copies the tool to a temporary folder, wraps `Scheduler.get_next_batch_to_run` so that an exception
writes the passes recorded so far and the error (`crash.txt`) before it propagates, runs the workload,
and then finishes the outputs with the tool's own `write_outputs`.

    python3 record_crash.py WORKLOAD.json OUT_DIR [--venv VENV] [--tool shared/tools/sglang_reference]
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

KEEP_CRASH = '''

# --- added by record_crash.py: keep the passes that ran before a crash ---
_patch_without_crash = _PATCHES["sglang.srt.managers.scheduler"]


@_after_import("sglang.srt.managers.scheduler")
def _patch_scheduler_keeping_crash(mod):
    _patch_without_crash(mod)
    next_batch = mod.Scheduler.get_next_batch_to_run

    def get_next_batch_to_run(self, *args, **kwargs):
        try:
            return next_batch(self, *args, **kwargs)
        except Exception as err:
            _write_outputs()
            with open(os.path.join(os.environ["REFSIM_OUT"], "crash.txt"), "w") as f:
                f.write(f"{type(err).__name__}: {err}\\n")
            raise

    mod.Scheduler.get_next_batch_to_run = get_next_batch_to_run
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload")
    ap.add_argument("out")
    venv = os.environ.get("SGLANG_REF_VENV", str(Path.home() / ".cache/sglang-ref-venv"))
    ap.add_argument("--venv", default=venv)
    shared = Path(__file__).resolve().parents[5] / "shared"
    ap.add_argument("--tool", default=str(shared / "tools/sglang_reference"))
    args = ap.parse_args()
    out = Path(args.out).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        tool = Path(tmp) / "sglang_reference"
        shutil.copytree(args.tool, tool)
        with open(tool / "stubs/refsim_hooks.py", "a") as f:
            f.write(KEEP_CRASH)
        run = [sys.executable, str(tool / "run_reference.py"), "--workload", args.workload, "--out", str(out),
               "--venv", args.venv, "--timeout", "120"]
        proc = subprocess.run(run, capture_output=True, text=True)
        if not (out / "crash.txt").exists():
            sys.exit(f"no crash recorded (exit {proc.returncode}); its last lines:\n{proc.stderr[-2000:]}")
        finish = ("import json, sys; sys.path.insert(0, sys.argv[1]); import run_reference as rr; "
                  "from pathlib import Path; w = rr.load_workload(sys.argv[2]); out = Path(sys.argv[3]); "
                  "s = rr.write_outputs(w, out, [], {}, (out / 'crash.txt').read_text().strip()); "
                  "print(json.dumps({k: s[k] for k in ('name', 'ok', 'error', 'passes')}))")
        env = dict(os.environ, REFSIM_ACTIVE="1")
        done = subprocess.run([f"{args.venv}/bin/python", "-c", finish, str(tool), args.workload, str(out)],
                              capture_output=True, text=True, env=env)
        print(done.stdout.strip() or done.stderr[-2000:])
    (out / "resolved_server_args.json").unlink(missing_ok=True)  # holds nothing without the server's info


if __name__ == "__main__":
    main()
