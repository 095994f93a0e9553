"""When SGLang's inter-token latency histogram understates a stall, and by how much.

SGLang's tokenizer records one ITL value per output chunk it sends: the time since the last chunk divided
by the chunk's new tokens, recorded that many times (`TokenizerManager.collect_metrics`,
`observe_inter_token_latency`; facts §8.6). A chunk holds several tokens when the stream interval is above
1 (`OutputStreamer`: a streamed reply is sent every `stream_interval` tokens), with speculative decoding
(a step appends several tokens), and for requests that are not streamed (sent every
`SGLANG_FORCE_STREAM_INTERVAL` = 50 tokens). A stall of S seconds then shows as k values of S / k.
"""

from __future__ import annotations

from engine_model.logs.scrape_report import MetricsReport

FORCE_STREAM_INTERVAL = 50  # SGLANG_FORCE_STREAM_INTERVAL's default in 0.5.23 (environ.py)
NO_ALGORITHM = (None, "", "None", "none", "NONE")


def understatements(found: dict, metrics: MetricsReport | None, streamed: tuple[float, float] | None,
                    hints: list[str]) -> list[str]:
    """Why the ITL tail may understate a stall here, from the resolved settings and the metrics."""
    notes = []
    interval = found.get("stream_interval")
    if isinstance(interval, int) and not isinstance(interval, bool) and interval > 1:
        notes.append(f"stream_interval is {interval}: SGLang sends a streamed reply every {interval} tokens "
                     f"and records each chunk's gap divided by its tokens, so a stall of S seconds shows as "
                     f"{interval} gaps of S/{interval}. The tail understates the stall.")
    elif "stream_interval" not in found:
        notes.append("stream_interval is not known (no server_args line or /server_info; SGLang's default is "
                     "1). Above 1, the tail understates a stall by that factor.")
    algorithm = found.get("speculative_algorithm")
    accept = (metrics.gauges.get("spec_accept_length") or [(None, None)])[-1][1] if metrics else None
    spec_hint = any("speculative" in h for h in hints)
    if algorithm not in NO_ALGORITHM or spec_hint or (accept and accept > 1):
        what = "speculative decoding" + (f" ({algorithm})" if algorithm not in NO_ALGORITHM else "")
        length = f" (accept length {accept:.2f})" if accept else ""
        notes.append(f"{what} emits several tokens a step{length}: each step's gap is divided among them, so "
                     "the tail understates a stall the same way.")
    if streamed is not None and streamed[1] > 0:
        total = streamed[0] + streamed[1]
        notes.append(f"{streamed[1]:,.0f} of {total:,.0f} finished requests were not streamed: SGLang sends "
                     f"their output every {FORCE_STREAM_INTERVAL} tokens, so their gaps are "
                     f"{FORCE_STREAM_INTERVAL}-token averages and hide a stall.")
    return notes
