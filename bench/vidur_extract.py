"""Extract Vidur's measured operator times (MIT) into tests/data/vidur, for the calibration and its tests.

    .venv/bin/python bench/vidur_extract.py --vidur <git dir of github.com/microsoft/vidur>

The fetched repository is read with `git show` and never copied whole or committed. Writes:
- ops_tp1.csv: per GPU, model and token count (TP 1), the median ms of one layer's operators;
- models.csv: the shapes Vidur profiled (heads, hidden, MLP width, vocab);
- attention_a100.csv: medians of the legacy A100 FlashAttention profile (the only attention data
  whose file is not a missing Git-LFS object): prefill chunks and decode batches;
- inputs.csv: every input's path, commit and sha256; the MIT licence beside them.
"""

import argparse
import hashlib
import io
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "data" / "vidur"
GPUS = ("h100", "a100", "a40")
# Llama-family models (pre-norm, RMSNorm, gated SiLU MLP, rope); phi-2's parallel block is left out.
MODELS = ("meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3-8B", "internlm/internlm-20b",
          "codellama/CodeLlama-34b-Instruct-hf", "meta-llama/Llama-2-70b-hf", "meta-llama/Meta-Llama-3-70B",
          "Qwen/Qwen-72B")
LINEAR_OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
ELEMENTWISE_OPS = ("input_layernorm", "attn_rope", "post_attention_layernorm", "mlp_act", "add")
SHAPE = ("n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size")
LEGACY_ATTENTION = ("e2d00e9afba96cec9f0e7ea560bbfc4a539fae6a", "data/profiling/a100/attention.csv")
KV_KEPT = (0, 512, 1024, 2048, 4032)  # past KV lengths kept from the attention profile


def show(git_dir: Path, commit: str, path: str) -> bytes:
    return subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
                          check=True, capture_output=True).stdout


def head_commit(git_dir: Path) -> str:
    return subprocess.run(["git", "--git-dir", str(git_dir), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def read(git_dir: Path, commit: str, path: str, inputs: list[dict]) -> pd.DataFrame:
    data = show(git_dir, commit, path)
    inputs.append({"path": path, "commit": commit, "sha256": hashlib.sha256(data).hexdigest()})
    return pd.read_csv(io.BytesIO(data))


def ops(git_dir: Path, commit: str, inputs: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """TP-1 rows; token counts profiled twice keep the mean of their medians."""
    frames, shapes = [], []
    for gpu in GPUS:
        for name in MODELS:
            path = f"data/profiling/compute/{gpu}/{name}/mlp.csv"
            try:
                raw = read(git_dir, commit, path, inputs)
            except subprocess.CalledProcessError:
                continue  # not profiled on this GPU (Llama-3 is on A100 only)
            raw = raw[raw["num_tensor_parallel_workers"] == 1]
            columns = {f"time_stats.{op}.median": op for op in LINEAR_OPS + ELEMENTWISE_OPS}
            table = (raw[["num_tokens", *columns]].rename(columns=columns)
                     .groupby("num_tokens", as_index=False).mean())
            table.insert(0, "model", name.split("/")[1])
            table.insert(0, "gpu", gpu)
            frames.append(table)
            shapes.append({"model": name.split("/")[1], **raw[list(SHAPE)].iloc[0].to_dict()})
    shape = pd.DataFrame(shapes).drop_duplicates("model")
    return pd.concat(frames, ignore_index=True).round(5), shape


def attention(git_dir: Path, inputs: list[dict]) -> pd.DataFrame:
    raw = read(git_dir, *LEGACY_ATTENTION, inputs)
    raw = raw[raw["kv_cache_size"].isin(KV_KEPT)]
    prefill = raw[raw["is_prefill"]].assign(kind="prefill", tokens=raw["prefill_chunk_size"],
                                            ms=raw["time_stats.attn_prefill.median"])
    decode = raw[~raw["is_prefill"]].assign(kind="decode", tokens=raw["batch_size"],
                                            ms=raw["time_stats.attn_decode.median"])
    keep = ["kind", "tokens", "kv_cache_size", "n_embd", "n_q_head", "n_kv_head",
            "num_tensor_parallel_workers", "ms"]
    both = pd.concat([prefill[keep], decode[keep]], ignore_index=True)
    return both.groupby(keep[:-1], as_index=False).mean().round(5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vidur", type=Path, required=True,
                        help="git directory of a microsoft/vidur snapshot")
    args = parser.parse_args()
    commit, inputs = head_commit(args.vidur), []
    OUT.mkdir(parents=True, exist_ok=True)
    table, shapes = ops(args.vidur, commit, inputs)
    table.to_csv(OUT / "ops_tp1.csv", index=False)
    shapes.to_csv(OUT / "models.csv", index=False)
    attention(args.vidur, inputs).to_csv(OUT / "attention_a100.csv", index=False)
    pd.DataFrame(inputs).to_csv(OUT / "inputs.csv", index=False)
    (OUT / "LICENSE.vidur-MIT.txt").write_bytes(show(args.vidur, commit, "LICENSE"))
    print(f"wrote {len(table)} operator rows, {len(shapes)} models, {len(inputs)} inputs to {OUT}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
