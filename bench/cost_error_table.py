"""The cost model against Vidur's measured operator times, per calibrated GPU, into docs/cost-model.md.

    .venv/bin/python bench/cost_error_table.py            # print and write between the error-table markers
    .venv/bin/python bench/cost_error_table.py --no-docs  # print only

Reads tests/data/vidur (written by bench/vidur_extract.py). Every model time comes from engine_model's
own kernel functions with the GPU presets' figures (bench/vidur_data.py); error = model / measured - 1.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.vidur_data import PRESETS, Point, attention_points, points, worst  # noqa: E402

DOC = Path(__file__).resolve().parents[1] / "docs" / "cost-model.md"
START, END = "<!-- error-table:start -->", "<!-- error-table:end -->"
BANDS = ((1, 64), (65, 256), (257, 1024), (1025, 4096), (4097, 32768))
POWERS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)


def band_cell(table: list[Point], low: int, high: int) -> str:
    errors = [p.error_pct for p in table if low <= p.tokens <= high]
    return f"{min(errors):+.0f} / {max(errors):+.0f}" if errors else "—"


def summary(groups: dict[str, list[Point]]) -> str:
    """One line per GPU and operator group: points, worst, mean |error|, share within 15 %, range per band."""
    head = "| GPU | operators | points | worst % | mean abs % | within ±15 % | " + " | ".join(
        f"{lo:,}–{hi:,}" for lo, hi in BANDS) + " |"
    lines = [head, "|---|---|---:|---:|---:|---:|" + "---:|" * len(BANDS)]
    for name, table in groups.items():
        gpu_name, kind = name.split(" ", 1)
        errors = [abs(p.error_pct) for p in table]
        within = sum(e <= 15 for e in errors) / len(errors)
        lines.append(f"| {gpu_name.upper()} | {kind} | {len(table)} | "
                     f"{max(table, key=lambda p: abs(p.error_pct)).error_pct:+.1f} "
                     f"| {sum(errors) / len(errors):.1f} | {within:.0%} | "
                     + " | ".join(band_cell(table, lo, hi) for lo, hi in BANDS) + " |")
    return "\n".join(lines)


def by_model(groups: dict[str, list[Point]]) -> str:
    """Worst error per GPU, model and operator group."""
    lines = ["| GPU | model | linear worst % | element-wise worst % |", "|---|---|---:|---:|"]
    for gpu_name in PRESETS:
        linear, elementwise = groups[f"{gpu_name} linear"], groups[f"{gpu_name} element-wise"]
        for model in dict.fromkeys(p.model for p in linear):
            cells = [
                f"{max((p for p in t if p.model == model), key=lambda p: abs(p.error_pct)).error_pct:+.1f}"
                for t in (linear, elementwise)]
            lines.append(f"| {gpu_name.upper()} | {model} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def per_token(groups: dict[str, list[Point]], model: str, gpus: tuple[str, ...]) -> str:
    """Measured and model ms at powers of two for one model: linear and element-wise, per GPU."""
    cols = [(g, kind) for g in gpus for kind in ("linear", "element-wise")]
    head = "| tokens | " + " | ".join(f"{g.upper()} {k} measured / model ms (error)" for g, k in cols) + " |"
    lines = [head, "|---:|" + "---:|" * len(cols)]
    for tokens in POWERS:
        cells = []
        for g, kind in cols:
            hit = [p for p in groups[f"{g} {kind}"] if p.model == model and p.tokens == tokens]
            cells.append(f"{hit[0].measured_ms:.4f} / {hit[0].model_ms:.4f} ({hit[0].error_pct:+.0f}%)"
                         if hit else "—")
        if any(c != "—" for c in cells):
            lines.append(f"| {tokens:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def attention_table(table: list[Point]) -> str:
    """A100 attention: prefill chunks without past KV, and decode batches at 4,032 tokens of context."""
    lines = ["| series | tokens | measured ms | model ms | error % |", "|---|---:|---:|---:|---:|"]
    keep = {"prefill kv=0": (64, 128, 256, 512, 1024, 2048, 4096), "prefill kv=2048": (64, 256, 1024, 2048),
            "decode kv=4032": (1, 2, 4, 8, 16, 32, 64, 128)}
    for series, sizes in keep.items():
        for p in table:
            if p.model == series and p.tokens in sizes:
                lines.append(f"| {series} | {p.tokens:,} | {p.measured_ms:.4f} | {p.model_ms:.4f} | "
                             f"{p.error_pct:+.1f} |")
    return "\n".join(lines)


def report() -> str:
    groups = {}
    for gpu_name in PRESETS:
        groups[f"{gpu_name} linear"] = points("linear", gpu_name)
        groups[f"{gpu_name} element-wise"] = points("elementwise", gpu_name)
    attention = attention_points()
    groups["a100 attention"] = attention
    return "\n\n".join([
        "Per GPU, all models and token counts (error range per token band):", summary(groups),
        "Worst error per model:", by_model(groups),
        "Llama-2-7B, the model measured on all three GPUs:",
        per_token(groups, "Llama-2-7b-hf", tuple(PRESETS)),
        "Llama-3-8B on A100, to 32,768 tokens:", per_token(groups, "Meta-Llama-3-8B", ("a100",)),
        f"Attention on A100 (worst over all {len(attention)} points {worst(attention):.0f} %):",
        attention_table(attention),
    ])


def write_docs(text: str) -> None:
    doc = DOC.read_text()
    if START not in doc or END not in doc:
        raise SystemExit(f"{DOC}: markers {START} / {END} not found")
    head, rest = doc.split(START, 1)
    DOC.write_text(head + START + "\n" + text + "\n" + END + rest.split(END, 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-docs", action="store_true", help="print only, leave docs/cost-model.md alone")
    args = parser.parse_args()
    text = report()
    print(text)
    if not args.no_docs:
        write_docs(text)


if __name__ == "__main__":
    main()
