#!/usr/bin/env python3
"""The project's reference tool (shared/tools/sglang_reference/run_reference.py), extended from our side
with prompts made of Mooncake-style blocks: a request may carry `hash_ids`, one id per 512-token block of its
prompt (equal ids, equal tokens: a later turn or a shared system prompt reuses a block's KV).

    python3 bench/sglang_reference/run_blocks.py --workload W.json --out DIR [--venv VENV] [--tool DIR]

Everything else is the tool's own: this wrapper loads `run_reference.py` as a module, widens the request
keys it accepts by `hash_ids`, and replaces only how a prompt's token ids are generated:
- block `b`: its first token is unique to the block (1000 + an index in order of first use), the other 511
  come from a generator seeded with the block id; a prompt is its blocks in order, cut to `prompt_len`;
- past its last block a prompt goes on with a stream of its own (first token unique again);
- a request without `hash_ids` keeps the tool's own ids (`prompt_seed`, or its own stream).
Different blocks therefore differ in their first token, as the model's runs assume (engine_model/radix.py).
"""

import importlib.util
import os
import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve()
DEFAULT_TOOL = HERE.parents[2].parent / "shared" / "tools" / "sglang_reference"
BLOCK_TOKENS = 512


def load_tool(tool: Path):
    spec = importlib.util.spec_from_file_location("run_reference", tool / "run_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def block_token_ids(rr, requests):
    """Token ids per request (see the module's docstring)."""
    index: dict[tuple, int] = {}

    def stream(key, num):
        first = 1000 + index.setdefault(key, len(index))
        if first >= rr.VOCAB:
            rr.fail("too many distinct blocks")
        rng = random.Random(f"{key[0]}:{key[1]}")
        return [first] + [rng.randrange(1000, rr.VOCAB) for _ in range(num - 1)]

    out = []
    for r in requests:
        if "hash_ids" not in r:
            key = ("seed", r["prompt_seed"]) if "prompt_seed" in r else ("rid", r["rid"])
            out.append(stream(key, r["prompt_len"]))
            continue
        ids = []
        for block in r["hash_ids"]:
            if len(ids) >= r["prompt_len"]:
                break
            ids += stream(("block", block), BLOCK_TOKENS)
        if len(ids) < r["prompt_len"]:
            ids += stream(("own", r["rid"]), r["prompt_len"] - len(ids))
        out.append(ids[: r["prompt_len"]])
    return out


def main():
    argv = sys.argv[1:]
    tool = Path(os.environ.get("REFSIM_TOOL", DEFAULT_TOOL))
    if "--tool" in argv:
        i = argv.index("--tool")
        tool = Path(argv[i + 1])
        del argv[i : i + 2]
    rr = load_tool(tool.resolve())
    if os.environ.get("REFSIM_ACTIVE") != "1":  # the tool's reexec_in_venv, but running this wrapper
        venv = argv[argv.index("--venv") + 1] if "--venv" in argv else rr.DEFAULT_VENV
        python = Path(venv) / "bin" / "python"
        if not python.exists():
            rr.fail(f"no venv at {venv}")
        path = os.pathsep.join(filter(None, [str(tool / "stubs"), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, REFSIM_ACTIVE="1", SGLANG_USE_CPU_ENGINE="1", CUDA_VISIBLE_DEVICES="",
                   PYTHONWARNINGS="ignore", PYTHONHASHSEED="0", REFSIM_TOOL=str(tool.resolve()),
                   PYTHONPATH=path)
        os.execve(str(python), [str(python), str(HERE), *argv], env)
    rr.REQUEST_KEYS = rr.REQUEST_KEYS | {"hash_ids"}
    rr.prompt_token_ids = lambda requests: block_token_ids(rr, requests)
    sys.argv = [str(tool / "run_reference.py"), *argv]
    rr.main()


if __name__ == "__main__":
    main()
