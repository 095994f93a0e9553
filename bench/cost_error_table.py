"""Extract Vidur's measured Llama-2-7B operator times and compare them with the roofline.

    .venv/bin/python bench/cost_error_table.py --shared /work/shared

1. Reads shared/data/vidur_profiling/compute/{h100,a100}/meta-llama/Llama-2-7b-hf/mlp.csv, keeps the
   rows with num_tensor_parallel_workers == 1 and writes the per-layer medians (ms) of the operators
   to tests/data/vidur/llama2_7b_tp1_ops.csv, with Vidur's MIT licence beside it.
2. Prints the error table of `linear_layer_seconds` against the measured linear operators (QKV, O,
   MLP up/gate, MLP down) and writes it into docs/cost-model.md between the error-table markers.
"""

import argparse
import csv
import shutil
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine_model.cost import linear_layer_seconds  # noqa: E402
from engine_model.hardware import gpu, model  # noqa: E402

GPUS = {"h100": "h100-sxm", "a100": "a100-80gb"}
LINEAR_OPS = ["attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"]
OTHER_OPS = ["input_layernorm", "attn_rope", "post_attention_layernorm", "mlp_act", "add"]
OUT_DIR = REPO / "tests" / "data" / "vidur"
OUT_CSV = OUT_DIR / "llama2_7b_tp1_ops.csv"
DOC = REPO / "docs" / "cost-model.md"
START, END = "<!-- error-table:start -->", "<!-- error-table:end -->"


def extract(shared: Path) -> pd.DataFrame:
    """TP1 rows of both GPUs; token counts profiled twice (2,048 and 4,096) keep the mean of the medians."""
    frames = []
    for name in GPUS:
        path = shared / "data" / "vidur_profiling" / "compute" / name / "meta-llama" / "Llama-2-7b-hf" / "mlp.csv"
        raw = pd.read_csv(path)
        raw = raw[raw["num_tensor_parallel_workers"] == 1]
        columns = {f"time_stats.{op}.median": f"{op}_ms" for op in LINEAR_OPS + OTHER_OPS}
        ops = raw[["num_tokens", *columns]].rename(columns=columns).groupby("num_tokens", as_index=False).mean()
        ops.insert(0, "gpu", name)
        ops["linear_ms"] = ops[[f"{op}_ms" for op in LINEAR_OPS]].sum(axis=1)
        frames.append(ops)
    return pd.concat(frames, ignore_index=True).round(6)


def error_rows(measured: list[dict]) -> list[dict]:
    """One row per (gpu, num_tokens): measured and model ms of one layer's linear operators."""
    llama = model("llama-2-7b")
    rows = []
    for row in measured:
        tokens = int(row["num_tokens"])
        model_ms = linear_layer_seconds(gpu(GPUS[row["gpu"]]), llama, tokens) * 1e3
        measured_ms = float(row["linear_ms"])
        rows.append({"gpu": row["gpu"], "num_tokens": tokens, "measured_ms": measured_ms,
                     "model_ms": model_ms, "error_pct": 100 * (model_ms - measured_ms) / measured_ms})
    return rows


def markdown(rows: list[dict]) -> str:
    """Both GPUs side by side, one line per token count."""
    by_gpu = {(r["gpu"], r["num_tokens"]): r for r in rows}
    lines = ["| tokens | H100 measured ms | H100 model ms | H100 error % | A100 measured ms | A100 model ms | A100 error % |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for tokens in sorted({r["num_tokens"] for r in rows}):
        h, a = by_gpu[("h100", tokens)], by_gpu[("a100", tokens)]
        lines.append(f"| {tokens} | {h['measured_ms']:.4f} | {h['model_ms']:.4f} | {h['error_pct']:+.1f} "
                     f"| {a['measured_ms']:.4f} | {a['model_ms']:.4f} | {a['error_pct']:+.1f} |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    lines = []
    for name in GPUS:
        for low, high in ((1, 4096), (512, 4096)):
            errors = [r["error_pct"] for r in rows if r["gpu"] == name and low <= r["num_tokens"] <= high]
            worst = max(errors, key=abs)
            lines.append(f"- {name.upper()}, {low}-{high} tokens ({len(errors)} points): worst {worst:+.1f}%, "
                         f"mean |error| {sum(map(abs, errors)) / len(errors):.1f}%")
    return "\n".join(lines)


def write_docs(text: str) -> None:
    doc = DOC.read_text()
    if START not in doc or END not in doc:
        raise SystemExit(f"{DOC}: markers {START} / {END} not found")
    head, rest = doc.split(START, 1)
    DOC.write_text(head + START + "\n" + text + "\n" + END + rest.split(END, 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, help="shared/ folder; omit to reuse tests/data/vidur")
    parser.add_argument("--no-docs", action="store_true", help="print only, leave docs/cost-model.md alone")
    args = parser.parse_args()
    if args.shared:
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        extract(args.shared).to_csv(OUT_CSV, index=False)
        shutil.copyfile(args.shared / "data" / "vidur_profiling" / "LICENSE.vidur-MIT.txt", OUT_DIR / "LICENSE.vidur-MIT.txt")
    with OUT_CSV.open() as f:
        rows = error_rows(list(csv.DictReader(f)))
    text = summary(rows) + "\n\n" + markdown(rows)
    print(text)
    if not args.no_docs:
        write_docs(text)


if __name__ == "__main__":
    main()
