"""Make this folder's bench_serving output files: the export's run_test.py against tests/bench_stub.py.

Run from the repository root: `.venv/bin/python tests/data/bench_serving/make_data.py`. See SOURCE.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from bench_stub import stub_server  # noqa: E402

from engine_model import load_scenario  # noqa: E402
from engine_model.benchtest import bench_export, write_export  # noqa: E402

HERE = Path(__file__).parent
# The shrunk workloads: few requests, so the files stay small and the stub answers in seconds.
SMALL = {"forty_replies": ["workload.groups.0.count=3", "workload.groups.1.prompt_len=9000"],
         "ten_oclock_rush_pd": ["workload.groups.0.count=4", "workload.groups.1.count=1",
                                "workload.groups.1.prompt_len=40000"]}


def run_export(name: str, out: Path, time_scale: float = 0.05) -> None:
    """Every setting's run_test.py line from the export's client.sh, against a fresh stub; lines appended."""
    scenario = load_scenario(name, SMALL[name])
    with tempfile.TemporaryDirectory() as folder:
        write_export(bench_export(scenario), folder)
        for line in (Path(folder) / "client.sh").read_text().splitlines():
            if line.startswith("python run_test.py"):
                with stub_server(max_requests=20) as (url, _):
                    args = line.split()[1:]
                    args[args.index("--base-url") + 1] = url
                    args[args.index("--output-file") + 1] = str(out.resolve())
                    subprocess.run([sys.executable, *args, "--time-scale", str(time_scale)], cwd=folder,
                                   check=True, timeout=120)


def main() -> None:
    for name in SMALL:
        out = HERE / f"{name}_small.jsonl"
        out.unlink(missing_ok=True)
        run_export(name, out)
    # bench_serving's own keys only: the runner's line without `tag` and `who_waits`
    line = json.loads((HERE / "forty_replies_small.jsonl").read_text().splitlines()[0])
    plain = {k: v for k, v in line.items() if k not in ("tag", "who_waits")}
    (HERE / "forty_replies_plain.jsonl").write_text(json.dumps(plain) + "\n")


if __name__ == "__main__":
    main()
