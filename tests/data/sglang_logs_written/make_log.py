"""Writes llama70b_tp8.log: a server log in SGLang 0.5.23's formats for Llama-3.1-70B on 8 H100s (TP 8).

Written by this project (no line comes from a real log): the formats follow the real logs in
tests/data/sglang_logs/ (server_args, the scheduler's limits line, Prefill and Decode lines with the TP0 tag);
every number is made up to look like such a server. Run: python tests/data/sglang_logs_written/make_log.py
"""

from datetime import datetime, timedelta
from pathlib import Path

POOL = 1_301_512  # a little under what 0.85 of an H100 holds beside 70B/8 of bf16 weights
START = datetime(2026, 5, 4, 9, 0, 0)
ARGS = ("model_path='meta-llama/Llama-3.1-70B-Instruct', tokenizer_path='meta-llama/Llama-3.1-70B-Instruct', "
        "load_format='auto', trust_remote_code=False, dtype='auto', kv_cache_dtype='auto', "
        "quantization=None, context_length=None, device='cuda', "
        "served_model_name='meta-llama/Llama-3.1-70B-Instruct', mem_fraction_static=0.85, "
        "max_running_requests=None, max_total_tokens=None, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, schedule_policy='fcfs', schedule_conservativeness=1.0, page_size=1, "
        "tp_size=8, pp_size=1, dp_size=1, enable_dp_attention=False, enable_mixed_chunk=False, "
        "disable_overlap_schedule=False, disaggregation_mode='null', speculative_algorithm=None, "
        "stream_interval=1, decode_log_interval=40")


def stamp(seconds: float, tag: str = " TP0") -> str:
    return f"[{(START + timedelta(seconds=seconds)).strftime('%Y-%m-%d %H:%M:%S')}{tag}]"


def prefill(at: float, new_seq: int, tokens: int, running: int, queued: int, used: int) -> str:
    return (f"{stamp(at)} Prefill batch, #new-seq: {new_seq}, #new-token: {tokens}, #cached-token: 0, "
            f"token usage: {used / POOL:.2f}, #running-req: {running}, #queue-req: {queued}, "
            "#pending-token: 0, cuda graph: False, input throughput (token/s): 21000.00")


def decode(at: float, running: int, used: int) -> str:
    return (f"{stamp(at)} Decode batch, #running-req: {running}, #token: {used}, token usage: "
            f"{used / POOL:.2f}, cuda graph: True, gen throughput (token/s): {running * 45:.2f}, "
            "#queue-req: 0")


def lines() -> list[str]:
    out = [f"{stamp(0, '')} server_args=ServerArgs({ARGS})",
           f"{stamp(20)} Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.47 GB",
           f"{stamp(22)} max_total_num_tokens={POOL}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
           "max_running_requests=4096, context_len=131072, available_gpu_mem=9.88 GB"]
    at, running, used = 30.0, 0, 0
    for i in range(24):  # chats arrive over 12 s
        tokens = 1200 + (i * 377) % 1800
        out.append(prefill(at, 1, tokens, running, 0, used))
        running, used = running + 1, used + tokens
        at += 0.5
        if i % 4 == 3:
            used += 40 * running
            out.append(decode(at, running, used))
    left = 60_000
    while left > 0:  # a 60,000-token document, one chunk a pass, the chats wait
        chunk = min(8192, left)
        out.append(prefill(at, 1, chunk, running, 0, used))
        left, used, at = left - chunk, used + chunk, at + 0.4
    running += 1
    for _ in range(12):
        used += 40 * running
        at += 1.0
        out.append(decode(at, running, used))
    return out


if __name__ == "__main__":
    path = Path(__file__).with_name("llama70b_tp8.log")
    path.write_text("\n".join(lines()) + "\n")
    print(f"wrote {path}")
