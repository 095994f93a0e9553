"""The stories as data: which scenario, which settings a person may change, which headline numbers, and
the guided tour. The app draws them (app/story/); the CLI's `figure` command exports them.

A `Control` is one setting: its URL parameter, its widget kind, its default and how it writes its value
into the scenario (a dict read from the scenario's TOML). Controls marked `is_flag` are SGLang server
flags. A story's baseline ("before") is the story as it opened: every setting of the main row at its
default (SGLang's defaults for the flags, the story's own pool, load and lengths for the rest), on the
GPU, model and seed now chosen. So every change a person or the tour makes in the main row — a flag or the
workload — reads as before -> after, and the seed is never what differs.

A tour step's narration may quote the run it leads to, so it stays true on any GPU, model or seed:
`{now:GROUP.METRIC.STAT}` and `{before:GROUP.METRIC.STAT}` are one number of the run shown or of its
baseline (GROUP a group name or `all`; METRIC a key of engine_model.metrics.GroupMetrics; STAT p50 / p95 /
p99 / max / mean, left out for a count), and `{trap}` is the percentile-trap sentence when p99 and the
longest pause disagree by an order of magnitude (app.story.headline), else nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from engine_model.config import Scenario
from engine_model.feasibility import check as check_deployment
from engine_model.hardware import GPUS, MODELS
from engine_model.mix import apply_mix, encode, label
from engine_model.mix import decode as decode_mix
from engine_model.pass_cost import cost_figures
from engine_model.resolve import INIT_NEW_TOKEN_RATIO
from engine_model.scenario_io import apply_sets, read_toml, validate

# -- settings a person changes -----------------------------------------------------------------------
EMPTY = "default"  # a number control left empty, in the URL: the figure it stands for (cost_controls)


@dataclass(frozen=True)
class Control:
    key: str  # URL parameter; the widget key is "<page>.<key>"
    label: str
    widget: str  # "toggle" | "select" | "slider" | "number" (None: the default figure; see cost_controls)
    default: object
    apply: Callable[[dict, object], None]
    options: tuple = ()  # select: the values; slider, number: (min, max, step); an int step: whole numbers
    is_flag: bool = True
    help: str = ""
    # "main": the settings row; "more": the deployment and seed; "figure": the GPU's figures and the model's
    # shapes; "cost": the cost panel
    where: str = "main"
    fmt: Callable[[object], str] = str
    # a "text" control's URL value -> its value (ValueError with what is allowed): the request mix
    check: Callable[[str], object] | None = None

    def parse(self, text: str):
        """A URL value -> a control value, or ValueError with what is allowed."""
        text = text.strip()
        if self.check is not None:
            return self.check(text)
        if self.widget == "toggle":
            if text.lower() in ("1", "true", "on", "yes"):
                return True
            if text.lower() in ("0", "false", "off", "no"):
                return False
            raise ValueError("expected 1 or 0")
        if self.widget == "select":
            for option in self.options:
                if text == str(option):
                    return option
            raise ValueError(f"expected one of {', '.join(map(str, self.options))}")
        if self.default is None and text == EMPTY:
            return None
        low, high, step = self.options
        whole = self.widget == "slider" or isinstance(step, int)
        allowed = f"expected a {'whole ' if whole else ''}number from {low:g} to {high:g}"
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            raise ValueError(allowed) from None
        if not low <= value <= high:  # also refuses nan
            raise ValueError(allowed)
        return value

    def to_url(self, value) -> str:
        if self.widget == "toggle":
            return "1" if value else "0"
        if self.widget != "number":
            return str(value)  # a "text" control's value is its URL text
        return EMPTY if value is None else str(value) if isinstance(value, int) else f"{value:g}"


def group(data: dict, name: str) -> dict:
    for g in data.get("workload", {}).get("groups", []):
        if g["name"] == name:
            return g
    raise KeyError(name)


def setter(*path: str) -> Callable[[dict, object], None]:
    def apply(data: dict, value) -> None:
        node = data
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return apply


def group_setter(name: str, key: str, convert=lambda v: v) -> Callable[[dict, object], None]:
    def apply(data: dict, value) -> None:
        group(data, name)[key] = convert(value)
    return apply


# --schedule-conservativeness: each option starts new_token_ratio at a different value; 1.5 stands for every
# value from 1/0.7 up, where min(0.7 x c, 1) saturates (ResolvedNewTokenRatio: resolve.INIT_NEW_TOKEN_RATIO)
CONSERVATIVENESS_OPTIONS = (0.3, 0.5, 0.7, 1.0, 1.2, 1.5)


def conservativeness_label(value: float) -> str:
    start = min(INIT_NEW_TOKEN_RATIO * value, 1.0)
    if start >= 1.0:
        return f"{value:g} or more (ratio starts at 1: saturated)"
    return f"{value:g} (ratio starts at {start:.2f})"  # no arrow: "→" means only before → after


def chunk_value(value):
    return -1 if value == "off" else value


CHUNK_OPTIONS = ("auto", 512, 1024, 2048, 4096, 8192, 16384, "off")


def chunk_label(value) -> str:
    if value == "auto":
        return "auto (GPU memory)"
    if value == "off":
        return "off (no chunking)"
    return f"{value:,}"


def mixed_control() -> Control:
    return Control("mixed", "Mixed chunk", "toggle", False, setter("engine", "enable_mixed_chunk"),
                   help="--enable-mixed-chunk: each prefill pass also carries one decode step for every "
                        "running request. SGLang default: off.")


def prefix_cache_control() -> Control:
    return Control("prefix_cache", "Prefix cache", "toggle", True,
                   lambda d, v: setter("engine", "disable_radix_cache")(d, not v),
                   help="The radix cache (off: --disable-radix-cache): a prompt's leading tokens that an "
                        "earlier request left in KV are not computed again; kept until the pool needs the "
                        "room, least recently used first. SGLang default: on.")


def chunk_control() -> Control:
    return Control("chunk", "Chunk size", "select", "auto",
                   lambda d, v: setter("engine", "chunked_prefill_size")(d, chunk_value(v)), CHUNK_OPTIONS,
                   help="--chunked-prefill-size: prompt tokens per pass. "
                        "SGLang default: picked from GPU memory.", fmt=chunk_label)


def policy_control() -> Control:
    """--schedule-policy, the two a person compares: fcfs and shortest-prefill-first."""
    return Control("policy", "Queue order", "select", "fcfs", setter("engine", "schedule_policy"),
                   ("fcfs", "shortest-prefill-first"), fmt=lambda v: POLICY_LABELS[v],
                   help="--schedule-policy. fcfs (default): the queue in arrival order. "
                        "shortest-prefill-first (SGLang 0.5.21+): on every prefill attempt the queue is "
                        "sorted by the prompt tokens a request still has to prefill (what the radix cache "
                        "does not already hold), fewest first; and while a long prompt is being chunked its "
                        "next chunk is capped so the shorter waiting requests fit in the same pass "
                        "(shortest_prefill_chunk_limit). It needs the radix cache: SGLang refuses to start "
                        "with --disable-radix-cache ('requires prefix caching').")


def interval_control() -> Control:
    return Control("interval", "Decode rounds between prefills", "slider", 0,
                   setter("engine", "prefill_decode_interval"), (0, 40, 1),
                   help="--prefill-decode-interval: decode rounds forced after each prefill batch. "
                        "SGLang default: 0 (off).")


SPEC_OPTIONS = ("off", "EAGLE", "NGRAM", "STANDALONE")
SPEC_LABELS = {"off": "off", "EAGLE": "EAGLE (keeps mixed chunk)", "NGRAM": "NGRAM (mixed chunk off)",
               "STANDALONE": "STANDALONE (mixed chunk off)"}


def spec_apply(data: dict, value) -> None:
    engine = data.setdefault("engine", {})
    if value == "off":
        engine.pop("speculative_algorithm", None)
    else:
        engine["speculative_algorithm"] = value


def spec_control() -> Control:
    """--speculative-algorithm: what SGLang changes at start-up for it (engine_model/speculative.py)."""
    return Control("spec", "Speculative decoding", "select", "off", spec_apply, SPEC_OPTIONS,
                   fmt=SPEC_LABELS.__getitem__,
                   help="--speculative-algorithm. At start-up SGLang switches mixed chunk off for NGRAM and "
                        "STANDALONE (EAGLE and EAGLE3 keep it, but a mixed pass gives each running reply one "
                        "plain token) and sets max running requests to 48 unless you set it. Each verify "
                        "commits 2.5 tokens on average here: an assumption "
                        "(engine.speculative_accept_length); the draft passes are priced as a share of a "
                        "decode pass. SGLang default: off.")


DP_OPTIONS = ("off", 2, 4)


def dp_apply(data: dict, value) -> None:
    """DP attention's ranks; TP is raised to them where it is lower (a rank needs at least one GPU)."""
    if value == "off":
        return
    data.setdefault("engine", {}).update(enable_dp_attention=True, dp_size=value)
    hardware = data.setdefault("hardware", {})
    hardware["tp_size"] = max(hardware.get("tp_size", 1), value)


def dp_control() -> Control:
    """--enable-dp-attention --dp-size N on one engine (engine_model/dp_attention.py). Listed after the
    deployment's controls: it raises their TP to its ranks."""
    return Control("dp", "DP attention", "select", "off", dp_apply, DP_OPTIONS,
                   fmt=lambda v: "off" if v == "off" else f"{v} ranks",
                   help="--enable-dp-attention --dp-size N: one engine, N schedulers, each with its own "
                        "queue and KV pool; every forward pass runs on all of them together (a rank with "
                        "nothing runs an idle batch), so a pass lasts as long as the slowest rank's. Each "
                        "rank gets chunk size / N and conservativeness × 0.3. TP is raised to N where it is "
                        "lower. SGLang default: off.")


def common_controls() -> tuple[Control, ...]:
    """What every page shares: the deployment (GPU, tensor parallel, model, weight and KV precision) and the
    seed (where="more"), and every figure of the GPU and every shape of the model, editable (where="figure";
    empty: the preset's)."""
    return (*deployment_controls(), *figure_controls(),
            Control("seed", "Random seed", "slider", 0, lambda d, v: d.__setitem__("seed", v), (0, 99, 1),
                    is_flag=False, where="more",
                    help="Lengths and arrivals are drawn from this seed; the baseline uses the same one."))


TP_OPTIONS = (1, 2, 4, 8)  # one 8-GPU node; a scenario may set up to 64 (engine_model.deployment)


CLIENT_LABELS = {"reply": "the reply's length", "none": "none (the server's default)"}


def client_control(group_name: str) -> Control:
    """What the group's clients send as max_tokens (workload.groups.N.max_new_tokens): the reply's length,
    or nothing, as an OpenAI-style client may (workload.client_max_new)."""
    return Control("client", "Client's max_tokens", "select", "reply",
                   group_setter(group_name, "max_new_tokens"), tuple(CLIENT_LABELS), is_flag=False,
                   fmt=CLIENT_LABELS.__getitem__,
                   help="What each client sends as max_tokens (max_new_tokens). The reply's length: the "
                        "story's assumption, as a benchmark client sends; admission reserves it × "
                        "new_token_ratio. None: as an OpenAI-style client that leaves it out; SGLang fills "
                        "in max_req_len − prompt − 1 (init_req_max_new_tokens) and admission reserves "
                        "min(that, 4,096) × new_token_ratio, more than most replies need: fewer admitted, "
                        "fewer retracted, longer queues.")


MIX = "mix"  # the request mix's control key and URL parameter


def canonical_mix(text: str) -> str:
    """A link's mix text as the page keeps it (a preset's key, else the custom mix's text); "" is the
    story's own workload. ValueError says what is allowed."""
    return encode(decode_mix(text)) if text else ""


def mix_control() -> Control:
    """The request mix (engine_model.mix): "" keeps the story's own workload; a preset's key or a custom
    mix's text replaces it. It stays what it is in the baseline and on every tour step (where="mix"), so
    before → after is the same traffic under other flags. Last among a story's controls: it replaces the
    workload the story's own controls have just set."""
    def apply(data: dict, value) -> None:
        if value:
            apply_mix(data, decode_mix(value))
    return Control(MIX, "Request mix", "text", "", apply, is_flag=False, where=MIX, fmt=label,
                   check=canonical_mix,
                   help="Your traffic instead of the story's: named groups, each a share of the requests "
                        "with prompt and reply lengths, and how they arrive. Presets are assumptions; edit "
                        "them.")


def tp_label(value: int) -> str:
    return f"TP {value} ({value} GPU{'s' if value > 1 else ''})"


def tp_help(model) -> str:
    """The tensor-parallel control's help for this model: what each GPU holds of a token's KV depends on
    its attention (engine_model.hardware.kv_bytes_per_token): GQA splits the KV heads over the GPUs (one
    head each at least, then copied), MLA keeps the whole compressed latent of every token on every GPU."""
    if model.attention == "mla":
        kv = ("every GPU holds the whole compressed KV latent of every token (MLA's latent is not split "
              "by TP), so more GPUs add room for tokens only through the memory the weights free")
    else:
        kv = (f"1/TP of every token's KV heads ({model.num_kv_heads} in all; past TP {model.num_kv_heads} "
              "each GPU keeps one head, copied)")
    return ("--tp-size: how many GPUs one engine splits the model over (one 8-GPU node). SGLang needs it to "
            f"split the attention heads. Each GPU holds 1/TP of the weights; for {model.name}, {kv}. The "
            "passes pay an all-reduce per layer. One engine has no data-parallel attention in this model "
            "(PD workers do).")


def deployment_controls() -> tuple[Control, ...]:
    """Where the story runs: a GPU and model preset (or your own: "custom"), tensor parallel, precision.
    Every combination passes engine_model.feasibility.check before it runs."""
    return (
        Control("gpu", "GPU", "select", "h100-sxm", setter("hardware", "gpu"), tuple(GPUS), is_flag=False,
                where="more", fmt=lambda k: GPUS[k].name,
                help="Sets the pass cost, the KV pool and the default chunk size. Every figure is editable "
                     "below the deployment (Custom GPU: start from the H100's and type yours)."),
        Control("tp", "Tensor parallel", "select", 1, setter("hardware", "tp_size"), TP_OPTIONS,
                is_flag=False, where="more", fmt=tp_label,
                help=tp_help(MODELS["llama-3.1-8b"])),
        Control("model", "Model", "select", "llama-3.1-8b", setter("model", "name"), tuple(MODELS),
                is_flag=False, where="more", fmt=lambda k: MODELS[k].name,
                help="Shapes from the model's config.json; every shape is editable below the deployment."),
        Control("wdtype", "Weights", "select", "bf16", setter("model", "weight_dtype"), WEIGHT_DTYPES,
                is_flag=False, where="more", fmt=WEIGHT_LABELS.__getitem__,
                help="The checkpoint's precision (SGLang's --dtype, or an FP8 / FP4 checkpoint or "
                     "--quantization): bytes per weight, so memory left for the KV pool, and the GEMMs' "
                     "rate."),
        Control("kvdtype", "KV cache", "select", "auto", setter("model", "kv_dtype"), KV_DTYPES,
                is_flag=False, where="more", fmt=KV_LABELS.__getitem__,
                help="--kv-cache-dtype: fp8 halves the bytes per token, so the same memory holds twice the "
                     "tokens. auto (SGLang's default) is bf16, or fp8 for a DSA model (GLM-5) on SM100+."),
    )


WEIGHT_DTYPES, KV_DTYPES = ("bf16", "fp8", "nvfp4"), ("auto", "bf16", "fp8")
WEIGHT_LABELS = {"bf16": "bf16 (16-bit)", "fp8": "fp8", "nvfp4": "nvfp4 (4-bit)"}
KV_LABELS = {"auto": "auto (SGLang's default)", "bf16": "bf16 (bfloat16)", "fp8": "fp8 (fp8_e4m3)"}
# A figure control's key is "<gpu|model>.<field>"; empty (None) keeps the preset's figure.
GPU_FIGURES = (("memory_gib", "Memory (GiB)", (1.0, 4096.0, 0.01)),
               ("bf16_tflops", "BF16 TFLOPS, dense", (1.0, 100_000.0, 0.1)),
               ("fp8_tflops", "FP8 TFLOPS, dense", (1.0, 100_000.0, 0.1)),
               ("memory_tbps", "Memory bandwidth (TB/s)", (0.01, 1000.0, 0.001)),
               ("interconnect_gbps", "GPU-to-GPU (GB/s, one way)", (1.0, 100_000.0, 0.1)))
MODEL_FIGURES = (("num_layers", "Layers", (1, 1000, 1)), ("hidden_size", "Hidden size", (1, 1_000_000, 1)),
                 ("num_heads", "Attention heads", (1, 10_000, 1)),
                 ("num_kv_heads", "KV heads", (1, 10_000, 1)),
                 ("head_dim", "Head dim", (1, 10_000, 1)),
                 ("intermediate_size", "MLP width (dense)", (0, 10_000_000, 1)),
                 ("vocab_size", "Vocabulary", (1, 10_000_000, 1)),
                 ("context_length", "Context (tokens)", (16, 10_000_000, 1)),
                 ("num_experts", "Experts (0: dense)", (0, 100_000, 1)),
                 ("num_experts_per_token", "Experts per token", (0, 100_000, 1)),
                 ("moe_intermediate_size", "Expert width", (0, 10_000_000, 1)))


def figure_controls() -> tuple[Control, ...]:
    """Each GPU figure (hardware.gpu_overrides) and model shape (model.overrides) as a number control."""
    def figure(kind: str, name: str, label: str, options: tuple, where: str) -> Control:
        return Control(f"{kind}.{name}", label, "number", None, optional_setter(*where.split("."), name),
                       options, is_flag=False, where="figure", fmt=number_label,
                       help=f"{where}.{name}: empty keeps the preset's.")
    return (*(figure("gpu", n, label, o, "hardware.gpu_overrides") for n, label, o in GPU_FIGURES),
            *(figure("model", n, label, o, "model.overrides") for n, label, o in MODEL_FIGURES))


def cost_controls() -> tuple[Control, ...]:
    """The cost panel's figures (docs/cost-model.md): the GPU's efficiency, the CPU's time per pass and per
    running request, and three SGLang flags about how a pass runs. A figure left empty (None) keeps the GPU
    preset's or the documented default. None is `is_flag`: everything here describes the machine the story
    runs on, like the GPU, so the baseline keeps it and "before -> after" compares the story's settings on
    one cost model (docs/cost-model.md, "In the app")."""
    def figure(key: str, name: str, label: str, say: str) -> Control:
        return Control(key, label, "number", None, roofline_setter(name), (0.01, 1.0, 0.01), is_flag=False,
                       where="cost", fmt=number_label,
                       help=f"cost.roofline.{name}: {say} Empty: the GPU preset's.")
    return (
        figure("gemm_mfu", "gemm_mfu", "GEMM MFU", "share of the tensor cores' peak large GEMMs reach."),
        figure("gemm_mbu", "gemm_mbu", "GEMM MBU", "share of memory bandwidth small GEMMs reach."),
        figure("ew_mbu", "elementwise_mbu", "Element-wise MBU",
               "share of memory bandwidth norms, rope, SiLU and adds reach."),
        figure("attn_mfu", "attention_mfu", "Attention MFU",
               "share of the BF16 peak prefill attention reaches."),
        figure("attn_mbu", "attention_mbu", "Attention MBU", "share of bandwidth decode attention reaches."),
        Control("cpu_pass_ms", "CPU per pass (ms)", "number", None, scaled_setter("per_pass_s", 1e-3),
                (0.0, 1000.0, 0.01), is_flag=False, where="cost", fmt=number_label,
                help="cost.per_pass_s: scheduling, input preparation, sampling and output, once per pass. "
                     "Empty: 0.79 ms (Vidur's A100 CPU profile)."),
        Control("cpu_req_us", "CPU per running request (µs)", "number", None,
                scaled_setter("per_request_s", 1e-6), (0.0, 100_000.0, 1.0), is_flag=False, where="cost",
                fmt=number_label,
                help="cost.per_request_s: the same work, per request in the pass. "
                     "Empty: 43 µs (same profile)."),
        Control("overlap", "Overlap schedule", "toggle", True,
                lambda d, v: setter("engine", "disable_overlap_schedule")(d, not v), is_flag=False,
                where="cost",
                help="SGLang's --disable-overlap-schedule turns it off: the CPU schedules the next batch "
                     "while the GPU runs this one, hiding the CPU time. SGLang default: on."),
        Control("graph_bs", "Decode CUDA graphs up to batch", "number", None,
                optional_setter("engine", "cuda_graph_max_bs_decode"), (0, 4096, 1), is_flag=False,
                where="cost", fmt=number_label,
                help="SGLang's --cuda-graph-max-bs-decode: decode batches up to this replay one captured "
                     "graph instead of launching every kernel. 0: none. Empty: SGLang's default by GPU "
                     "memory and TP."),
        Control("prefill_graph", "Prefill CUDA graphs up to (tokens)", "number", None,
                optional_setter("engine", "cuda_graph_max_bs_prefill"), (0, 1_000_000, 1), is_flag=False,
                where="cost", fmt=number_label,
                help="SGLang's --cuda-graph-max-bs-prefill: prefill and mixed passes of up to this many "
                     "tokens replay a breakable graph (every kernel captured but attention, which runs "
                     "eagerly between the segments), on by default on CUDA. 0: none "
                     "(--disable-prefill-cuda-graph). Empty: the chunk size."),
    )


# a cost control's key -> the figure of pass_cost.cost_figures it sets, and the control's unit (in that
# figure's)
COST_FIGURES = {"gemm_mfu": ("gemm_mfu", 1.0), "gemm_mbu": ("gemm_mbu", 1.0),
                "ew_mbu": ("elementwise_mbu", 1.0),
                "attn_mfu": ("attention_mfu", 1.0), "attn_mbu": ("attention_mbu", 1.0),
                "cpu_pass_ms": ("per_pass_s", 1e-3), "cpu_req_us": ("per_request_s", 1e-6),
                "graph_bs": ("cuda_graph_max_bs_decode", 1),
                "prefill_graph": ("cuda_graph_max_bs_prefill", 1)}


def number_label(value) -> str:
    return "default" if value is None else f"{value:g}"


def optional_setter(*path: str) -> Callable[[dict, object], None]:
    """Writes the value unless it is None (the default figure stays)."""
    def apply(data: dict, value) -> None:
        if value is not None:
            setter(*path)(data, value)
    return apply


def roofline_setter(name: str) -> Callable[[dict, object], None]:
    return optional_setter("cost", "roofline", name)


def scaled_setter(name: str, unit_s: float) -> Callable[[dict, object], None]:
    """A figure shown in ms or µs, written to cost.<name> in seconds."""
    def apply(data: dict, value) -> None:
        optional_setter("cost", name)(data, None if value is None else value * unit_s)
    return apply


# -- headline numbers --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Headline:
    label: str  # may use {group_count}: the number of requests in `group`
    group: str | None  # None: the whole run
    metric: str  # a key of engine_model.metrics.group_metrics
    stat: str | None = None  # p50/p95/p99/max/mean for distributions; None for counts
    unit: str = "s"  # "s" or "count"
    help: str = ""


# -- the guided tour ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TourStep:
    title: str
    # the narration, in plain words; {now:GROUP.METRIC.STAT}, {before:…} and {now:cursor.COLUMN} (the pass
    # under `cursor`, as the step-through shows it) are figures read from the runs (app.present.numbers)
    say: str
    settings: dict = field(default_factory=dict)  # control key -> value; others go back to their defaults
    cursor: tuple = ("first", "prefill chunk")  # see app.story.cursor.resolve
    focus: str = "tokens"  # which chart to point at: headline | passes | tokens | kv | queue | itl | why | pd
    section: dict = field(default_factory=dict)  # the page section's settings (PD: URL name -> value)
    # what the step's cards and its {before:…} figures compare with: these settings on the story as it
    # opened ({}: the story as it opened), e.g. the step whose point this one undoes
    versus: dict = field(default_factory=dict)
    # the token streams past the cursor are veiled (still to come), so a later step can show what happens
    veiled: bool = False


@dataclass(frozen=True)
class Story:
    key: str  # scenario name and page URL path
    title: str
    icon: str
    teaser: str
    controls: tuple[Control, ...]
    headlines: tuple[Headline, ...]
    tour: tuple[TourStep, ...]
    stream_group: str  # the requests whose token stream we watch
    long_group: str  # the request(s) whose first token we watch
    default_cursor: tuple = ("first", "prefill chunk")

    @property
    def defaults(self) -> dict:
        return {c.key: c.default for c in self.controls}

    def baseline_values(self, values: dict, versus: dict | None = None) -> dict:
        """The story as it opened: every main-row setting (SGLang's flags, the story's workload) at its
        default, then `versus` (a tour step's, TourStep.versus); the GPU, model and seed as now, so before
        and after run the same draws on the same hardware."""
        versus = versus or {}
        return {c.key: (versus.get(c.key, c.default) if c.where == "main" else values[c.key])
                for c in self.controls}

    def versus_step(self, i: int) -> int | None:
        """The earlier tour step (0-based) whose settings step `i` compares with (its `versus`), or None when
        it compares with the story as it opened."""
        versus = self.tour[i].versus
        return next((j for j in range(i) if versus and self.tour[j].settings == versus), None)

    def compared_with(self, i: int | None, values: dict) -> dict:
        """What the page's cards compare with while tour step `i` is on screen: its `versus` while the
        story's own settings are still the step's, else {} (the story as it opened)."""
        if i is None or not self.tour[i].versus:
            return {}
        step = self.tour[i]
        on_screen = all(values.get(c.key, c.default) == step.settings.get(c.key, c.default)
                        for c in self.controls if c.where == "main")
        return step.versus if on_screen else {}

    def changes(self, values: dict) -> list[tuple[Control, object, object]]:
        """The main-row settings that differ from the story's defaults: (control, default, now)."""
        return [(c, c.default, values[c.key]) for c in self.controls
                if c.where == "main" and values.get(c.key, c.default) != c.default]

    def cost_defaults(self, values: dict) -> dict:
        """What each cost control stands for when left at its default, under these settings (the GPU
        preset's figures, the documented CPU figures, SGLang's flags), in the control's unit; {} on the
        linear predictor. Raises InputError when the settings cannot run."""
        empty = {c.key: c.default for c in self.controls if c.where == "cost"}
        figures = cost_figures(self.scenario({**values, **empty}))
        return {key: round(figures[name] / unit, 9) if isinstance(unit, float) else figures[name]
                for key, (name, unit) in COST_FIGURES.items() if key in empty and name in figures}

    def with_mix(self, text: str | None) -> Story:
        """This story on a request mix (its link text; "" or None: the story as it is): the story's own
        workload controls go (the mix replaces what they set), and the cards, the watched groups and the
        tour's words follow the mix's groups — the one most requests belong to (its "stream") and the one
        with the longest prompts (its "long" group). The tour's steps keep their settings and cursors; their
        words quote the mix's numbers. Raises ValueError on text that is not a mix."""
        if not text or all(c.key != MIX for c in self.controls):
            return self
        mix = decode_mix(text)
        stream = max(mix.groups, key=lambda g: g.share).name
        long = max(mix.groups, key=lambda g: g.mean_prompt).name
        stat = "p95" if long != stream else "p99"
        headlines = (
            Headline(f"{stream}: p95 first token", stream, "ttft_s", "p95"),
            Headline(f"Longest pause, a {stream} reply", stream, "max_itl_s", "max"),
            Headline(f"{long}: {stat} first token", long, "ttft_s", stat),
            Headline(f"{stream}: p99 gap between tokens", stream, "itl_s", "p99"),
        )
        words = (f"On your mix: {stream}' p95 first token {{before:{stream}.ttft_s.p95}} → "
                 f"{{now:{stream}.ttft_s.p95}}, their longest pause {{before:{stream}.max_itl_s.max}} → "
                 f"{{now:{stream}.max_itl_s.max}}; {long}' {stat} first token "
                 f"{{before:{long}.ttft_s.{stat}}} → {{now:{long}.ttft_s.{stat}}}. "
                 "(The story's own words tell its own workload.)")
        tour = tuple(step if step.section.get("preset", "rush") != "rush" else replace(step, say=words)
                     for step in self.tour)
        # the story's own workload controls go; so does "questions outrank contracts", which names the
        # story's groups (a mix's groups carry no priority)
        controls = tuple(c for c in self.controls
                         if (c.is_flag or c.where != "main") and c.key not in GROUP_NAMED)
        teaser = (f"{self.title}'s settings on a request mix of your own — {label(text)} — instead of the "
                  "story's workload: who waits, and what do the flags change?")
        return replace(self, controls=controls, headlines=headlines, tour=tour, stream_group=stream,
                       long_group=long, teaser=teaser)

    def scenario(self, values: dict, sets: tuple[str, ...] = ()) -> Scenario:
        """The validated scenario for these control values, then any `--set dotted.key=value` overrides;
        raises InputError on an impossible combination, a deployment that cannot run included
        (engine_model.feasibility.check)."""
        data = copy.deepcopy(read_toml(self.key))
        for control in self.controls:
            control.apply(data, values.get(control.key, control.default))
        scenario = validate(apply_sets(data, list(sets)) if sets else data)
        check_deployment(scenario)
        return scenario


FORTY = Story(
    key="forty_replies",
    title="The forty replies",
    icon=":material/forum:",
    teaser="Forty replies are streaming when a 100,000-token log is pasted. Chunked prefill is on — do the "
           "forty keep getting tokens?",
    controls=(
        mixed_control(),
        chunk_control(),
        Control("streams", "Streams", "slider", 40, group_setter("streams", "count"), (1, 128, 1),
                is_flag=False, help="How many conversations are mid-reply when the log arrives."),
        Control("log", "Log length (tokens)", "select", 100000, group_setter("log", "prompt_len"),
                (10000, 25000, 50000, 100000, 120000), is_flag=False, fmt=lambda v: f"{v:,}"),
        Control("logprob", "Logprobs on 1 stream", "toggle", False,
                group_setter("streams", "num_return_logprob", lambda v: 1 if v else 0), is_flag=False,
                help="Any request asking for log probabilities turns mixing off for the pass it is in."),
        interval_control(),
        spec_control(),
        *common_controls(),
        dp_control(),
        *cost_controls(),
    ),
    headlines=(
        Headline("Longest pause, the {group_count} streams", "streams", "max_itl_s", "max",
                 help="The longest time any of the streaming replies went without a token."),
        Headline("The log's first token", "log", "ttft_s", "max",
                 help="Time from the paste to the log reply's first token."),
        Headline("Streams' p99 gap between tokens", "streams", "itl_s", "p99"),
        Headline("Streams' p95 gap between tokens", "streams", "itl_s", "p95"),
    ),
    tour=(
        TourStep("The forty are streaming",
                 "Forty replies are mid-stream: one decode pass every {now:cursor.duration_s} gives each of "
                 "them a token. Every tick on a lane is a token.", {}, ("at", 0.25), "tokens", veiled=True),
        TourStep("Now the log arrives",
                 "At 0.5 s a 100,000-token log is pasted. SGLang splits it into chunks — and prefill wins "
                 "every iteration while a chunk is pending. Orange bars: chunk after chunk, back to back.",
                 {}, ("first", "prefill chunk"), "passes", veiled=True),
        TourStep("Look at the gap",
                 "The forty get no token until the whole log is prefilled: the purple band is the "
                 "pause, {now:streams.max_itl_s.max}. Chunking did not help them — it only caps the memory "
                 "of each pass.",
                 {}, ("last", "prefill chunk"), "tokens"),
        TourStep("Flip mixed chunk",
                 "With --enable-mixed-chunk each chunk pass also carries one decode token for every running "
                 "request (green passes). The longest pause shrinks from {before:streams.max_itl_s.max} to "
                 "{now:streams.max_itl_s.max}, about one chunk pass (the purple band breaks into light pink "
                 "gaps, a token between each); the log's own first token comes a little later "
                 "({before:log.ttft_s.max} → {now:log.ttft_s.max}). {trap}",
                 {"mixed": True}, ("first", "mixed"), "tokens"),
        TourStep("Chunk size is now the knob",
                 "With mixing on, smaller chunks mean shorter pauses for the streams and a later first token "
                 "for the log: at 2,048 tokens the longest pause is {now:streams.max_itl_s.max} and the "
                 "log's first token comes after {now:log.ttft_s.max}. Open Compare for the whole curve.",
                 {"mixed": True, "chunk": 2048}, ("first", "mixed"), "itl"),
        TourStep("The logprob exception",
                 "One streaming request asks for logprobs. Mixing is skipped for any pass it is in, so the "
                 "stall is back — with the flag still on: the longest pause goes from "
                 "{before:streams.max_itl_s.max} (mixed chunk on, no logprobs) to "
                 "{now:streams.max_itl_s.max}.",
                 {"mixed": True, "logprob": True}, ("last", "prefill chunk"), "tokens",
                 versus={"mixed": True}),
        TourStep("Speculative decoding can switch it off",
                 "Mixed chunk is on, and the server runs NGRAM speculative decoding. SGLang turns "
                 "mixed chunk off at start-up for NGRAM and STANDALONE, so setting the flag is no proof it "
                 "is active: the longest pause goes from {before:streams.max_itl_s.max} (mixed chunk on, no "
                 "speculation) back to {now:streams.max_itl_s.max}. EAGLE keeps mixed chunk.",
                 {"mixed": True, "spec": "NGRAM"}, ("last", "prefill chunk"), "tokens",
                 versus={"mixed": True}),
        TourStep("DP attention: the picture is per scheduler",
                 "Two attention DP ranks on two GPUs: each rank has its own scheduler, queue and KV, and "
                 "the log lands on one of them. Its twenty streams wait out the whole prefill; the other "
                 "twenty get a token every pass, but each pass lasts as long as the log's chunk, since "
                 "the ranks run every pass together. Longest pause: {now:streams.max_itl_s.max}, against "
                 "{before:streams.max_itl_s.max} on the story's one GPU.",
                 {"dp": 2}, ("first", "prefill chunk"), "passes"),
    ),
    stream_group="streams",
    long_group="log",
)

OTHER_STALL = Story(
    key="other_stall",
    title="The other stall",
    icon=":material/memory:",
    teaser="The KV cache fills, the scheduler retracts running replies to the back of the queue, and they "
           "re-prefill later. Same symptom, different fix. Each client here asks for exactly its reply's "
           "length as max_tokens; *Client's max_tokens* offers one that sends none.",
    controls=(
        mixed_control(),
        chunk_control(),
        Control("conservativeness", "Conservativeness", "select", 1.0,
                setter("engine", "schedule_conservativeness"), CONSERVATIVENESS_OPTIONS,
                help="--schedule-conservativeness c: the reservation guess for replies still being written "
                     "(new_token_ratio) starts at min(0.7 × c, 1) and decays every decode step. Higher: "
                     "fewer admissions. It saturates: from c = 1/0.7 ≈ 1.43 up the guess starts at 1, so "
                     "1.5, 2 and 3 run the same. SGLang default: 1.0.", fmt=conservativeness_label),
        Control("pool", "KV pool (tokens)", "select", 60000, setter("engine", "max_total_tokens"),
                (40000, 60000, 80000, 120000, 200000), is_flag=False, fmt=lambda v: f"{v:,}",
                help="The story's small pool, as on a GPU shared with other work (an assumption; edit it)."),
        Control("rate", "Arrivals per second", "select", 16.0,
                lambda d, v: group(d, "chats")["arrival"].__setitem__("rate_per_s", v),
                (4.0, 8.0, 12.0, 16.0, 24.0, 32.0), is_flag=False),
        Control("chats", "Chat requests", "slider", 64, group_setter("chats", "count"), (8, 160, 8),
                is_flag=False),
        client_control("chats"),
        *common_controls(),
        *cost_controls(),
    ),
    headlines=(
        Headline("Requests pushed back (retracted)", None, "num_retracted", unit="count",
                 help="Requests evicted from the running batch to the back of the queue at least once."),
        Headline("Longest pause, a chat reply", "chats", "max_itl_s", "max"),
        Headline("Chats' p95 first token", "chats", "ttft_s", "p95"),
        Headline("Chats' p99 gap between tokens", "chats", "itl_s", "p99"),
    ),
    tour=(
        TourStep("Replies arrive faster than they finish",
                 "Sixteen chat requests a second on a small KV pool. Each client asks for exactly its "
                 "reply's length as max_tokens (the story's assumption; the last step tries a client that "
                 "sends none). The scheduler admits each one against a guess of how much it will still write "
                 "(new_token_ratio), and that guess shrinks every decode step.",
                 {}, ("at", 2.0), "queue"),
        TourStep("The pool fills",
                 "KV used (blue) climbs to the pool size. No prefill is to blame — the running replies are "
                 "growing.",
                 {}, ("retraction", 0), "kv", veiled=True),
        TourStep("Retraction",
                 "There is no slot for the next token of every running reply, so SGLang retracts the ones "
                 "with the fewest tokens generated and sends them to the back of the queue. The dark grey "
                 "rules on the KV chart mark it.",
                 {}, ("retraction", 0), "kv"),
        TourStep("They re-prefill later",
                 "A retracted reply keeps its text but loses its KV: later it is prefilled again — prompt "
                 "plus what it had written — and only then streams again. On its lane: dark grey, retracted "
                 "and waiting in the queue; orange, the re-prefill.",
                 {}, ("retraction", -1), "tokens"),
        TourStep("Mixed chunk does not fix this one",
                 "Turn mixed chunk on: the retractions stay ({before:all.num_retracted} → "
                 "{now:all.num_retracted} requests pushed back). The fix here is memory — a bigger pool, "
                 "fewer admissions (schedule conservativeness), or shorter replies.",
                 {"mixed": True}, ("retraction", 0), "headline"),
        TourStep("More KV is the fix",
                 "Double the pool to 120,000 tokens: requests pushed back drop from "
                 "{before:all.num_retracted} to {now:all.num_retracted} and the longest pause from "
                 "{before:chats.max_itl_s.max} to {now:chats.max_itl_s.max}.", {"pool": 120000},
                 ("retraction", 0), "kv"),
        TourStep("Conservativeness, and where it stops",
                 "Back to the small pool, and raise --schedule-conservativeness as far as it goes: the "
                 "reservation guess starts at min(0.7 × c, 1), which is 1 from c ≈ 1.43 up, so 1.5 and 3 "
                 "are the same server. Requests pushed back: {before:all.num_retracted} → "
                 "{now:all.num_retracted}; the longest pause: {before:chats.max_itl_s.max} → "
                 "{now:chats.max_itl_s.max}. The guess still decays every decode step, so the pool can "
                 "fill again: reserving more only delays it.", {"conservativeness": 1.5},
                 ("retraction", 0), "headline"),
        TourStep("A client that sends no max_tokens",
                 "An OpenAI-style client may leave max_tokens out. SGLang then fills in max_req_len − prompt "
                 "− 1 (init_req_max_new_tokens), and admission reserves min(that, 4,096) × new_token_ratio "
                 "for each request instead of its reply's length. Fewer fit, so fewer are pushed back "
                 "({before:all.num_retracted} → {now:all.num_retracted}) and more wait in the queue: the "
                 "chats' p95 first token goes from {before:chats.ttft_s.p95} to {now:chats.ttft_s.p95}.",
                 {"client": "none"}, ("at", 10.0), "queue"),
    ),
    stream_group="chats",
    long_group="chats",
    default_cursor=("retraction", 0),
)

QUESTIONS_PRIORITY, CONTRACTS_PRIORITY = 20, 0  # more than the preemption threshold (10) apart


def outrank(data: dict, value: bool) -> None:
    """--enable-priority-scheduling with each question sent at priority 20 and each contract at 0."""
    if value:
        data.setdefault("engine", {})["enable_priority_scheduling"] = True
        group(data, "questions")["priority"] = QUESTIONS_PRIORITY
        group(data, "contracts")["priority"] = CONTRACTS_PRIORITY


GROUP_NAMED = ("outrank",)  # controls that set the story's own groups: not offered on a request mix
SLOT_OPTIONS = ("auto", 16, 32, 64, 256)


def slots_label(value) -> str:
    return "auto (from the KV pool)" if value == "auto" else f"{value:,}"


RUSH_CONTROLS = (
    mixed_control(),
    chunk_control(),
    Control("outrank", "Questions outrank contracts", "toggle", False, outrank,
            help="--enable-priority-scheduling, each question sent with priority 20 and each contract with "
                 "0 (higher goes first; SGLang default: off). The queue is sorted by priority, then arrival, "
                 "on every prefill attempt. When every request slot is taken, a question preempts the "
                 "lowest-priority, newest running request more than --priority-scheduling-preemption-"
                 "threshold (10) below it: its KV is freed and it prefills again later. Preemption is for a "
                 "slot only: a question that does not fit the KV budget waits. Needs fcfs or lof."),
    Control("slots", "Request slots", "select", "auto",
            lambda d, v: setter("engine", "max_running_requests")(d, None if v == "auto" else v),
            SLOT_OPTIONS, fmt=slots_label,
            help="--max-running-requests: how many requests may run at once. SGLang default: from the KV "
                 "pool (2,048 here). Priority preemption fires only when these are all taken."),
    policy_control(),
    Control("contracts", "Contracts at ten", "slider", 6, group_setter("contracts", "count"), (1, 12, 1),
            is_flag=False, help="How many 120,000-token contracts arrive at once at t = 10 s."),
    Control("qps", "Questions per second", "select", 4.0,
            lambda d, v: group(d, "questions")["arrival"].__setitem__("rate_per_s", v),
            (1.0, 2.0, 4.0, 6.0, 8.0), is_flag=False),
    Control("qprompt", "Questions' median prompt (tokens)", "select", 600,
            lambda d, v: group(d, "questions")["prompt_len"].update(median=v, high=max(4000, 4 * v)),
            (300, 600, 1200, 2400, 4800), is_flag=False, fmt=lambda v: f"{v:,}",
            help="The middle of the questions' prompt lengths (lognormal, σ 0.6, from 50 tokens up to "
                 "4,000 or four times the median): an assumption; set it to your users'."),
    *common_controls(),
    *cost_controls(),
    mix_control(),
)

POLICY_LABELS = {"fcfs": "fcfs (arrival order)",
                 "shortest-prefill-first": "shortest-prefill-first (caps the running chunk; needs the "
                                           "radix cache)"}

RUSH = Story(
    key="ten_oclock_rush",
    title="Ten o'clock rush",
    icon=":material/schedule:",
    teaser="Short questions all morning; at ten, six 120,000-token contracts arrive. Who waits — and does "
           "splitting prefill from decode help?",
    controls=RUSH_CONTROLS,
    headlines=(
        Headline("Questions' p95 first token", "questions", "ttft_s", "p95"),
        Headline("Longest pause, a question's reply", "questions", "max_itl_s", "max"),
        Headline("Contracts' p95 first token", "contracts", "ttft_s", "p95"),
        Headline("Questions' p99 gap between tokens", "questions", "itl_s", "p99"),
    ),
    tour=(
        TourStep("A quiet morning", "Short questions arrive about four a second and clear quickly: short "
                 "prefills, steady decode.", {}, ("at", 8.0), "passes"),
        TourStep("Ten o'clock", "Six 120,000-token contracts arrive at once. Their prefill is chunked — and "
                 "prefill wins every iteration while a chunk is pending.",
                 {}, ("first_after", 10.0), "passes"),
        TourStep("The questions wait", "New questions queue behind the contracts (light grey), and replies "
                 "already streaming pause (purple) — up to {now:questions.max_itl_s.max}. The short "
                 "questions are not short in the queue.", {}, ("at", 30.0), "tokens"),
        TourStep("Mixed chunk", "Mixing keeps the running replies moving (a question's longest pause "
                 "{before:questions.max_itl_s.max} → {now:questions.max_itl_s.max}), but new questions still "
                 "queue behind the contracts' prefill (their p95 first token {before:questions.ttft_s.p95} → "
                 "{now:questions.ttft_s.p95}).", {"mixed": True}, ("at", 30.0), "headline"),
        TourStep("Split prefill from decode", "Split the same GPUs into a prefill worker and a decode worker "
                 "(the PD section below): no reply pauses for a chunk any more, since decode never runs a "
                 "prefill, but the questions now queue for the one prefill worker, and under early "
                 "allocation for decode KV reserved for the contracts (ochre lanes). On one engine a "
                 "question's longest pause is {now:questions.max_itl_s.max}; the cards above read today → "
                 "PD on this deployment.",
                 {}, ("first_after", 10.0), "pd"),
        TourStep("Upstream's test: early vs prefill_complete", "Now the shape of the test behind "
                 "prefill_complete (PR #40703, by a contributor; still open), on its own deployment: two "
                 "prefill workers, one decode worker whose KV is capped at 163,840 tokens per rank, 64 "
                 "prompts of 131,072 tokens among 4,096-token ones. Reserving decode KV only once a prompt "
                 "is prefilled frees decode memory that early holds idle. The PR's authors measured output "
                 "throughput +27 %, p95 first token −49 % and the p99 gap between tokens +93 % (a mean of "
                 "two runs); the cards above are the model's, and the box under them sets the four side by "
                 "side.",
                 {}, ("first_after", 10.0), "pd", {"preset": "upstream"}),
        TourStep("Shortest prefill first", "Back on one engine, SGLang's own knob for this rush: "
                 "--schedule-policy shortest-prefill-first (0.5.21+) sorts the queue by the prompt tokens "
                 "each request still has to prefill, so a question goes before a contract, and caps a "
                 "contract's running chunk so the waiting questions join its pass (the step-through names "
                 "the cap). The questions' p95 first token: {before:questions.ttft_s.p95} → "
                 "{now:questions.ttft_s.p95}; the contracts': {before:contracts.ttft_s.p95} → "
                 "{now:contracts.ttft_s.p95}; and replies already streaming still pause for every chunk "
                 "(up to {now:questions.max_itl_s.max}). It needs the radix cache, which SGLang has on by "
                 "default.", {"policy": "shortest-prefill-first"}, ("first_after", 12.0), "headline"),
        TourStep("Questions outrank contracts", "Or say who matters: --enable-priority-scheduling, each "
                 "question sent with priority 20, each contract with 0. On every prefill attempt the queue "
                 "is sorted by priority, so a question waits only for the chunk of the contract being "
                 "prefilled, never for the contracts still queued. The questions' p95 first token: "
                 "{before:questions.ttft_s.p95} → {now:questions.ttft_s.p95}. Who waits now is the "
                 "contracts: their p95 first token {before:contracts.ttft_s.p95} → "
                 "{now:contracts.ttft_s.p95}. Requests preempted: {now:all.num_preempted}. SGLang preempts "
                 "only to free a request slot, and the default slot count (from the KV pool) never fills "
                 "here.",
                 {"outrank": True}, ("first_after", 12.0), "headline"),
        TourStep("What preemption costs the contracts", "Now cap the running requests at 16. Once the "
                 "slots are full, a question takes one from a running contract (preempt_to_schedule: the "
                 "lowest priority, the newest first, more than 10 below): the contract's KV is freed, it "
                 "goes back to the queue behind every question and prefills again when a slot frees. Its "
                 "prompt stays in the radix cache only until the pool needs the room, which the other "
                 "contracts' prefills soon do, so the whole prompt is computed again. "
                 "Requests preempted: {now:all.num_preempted}; the slowest contract's whole answer: "
                 "{before:contracts.e2e_s.max} → {now:contracts.e2e_s.max}, while the questions' p95 first "
                 "token stays near {now:questions.ttft_s.p95}. The step-through names each preemption.",
                 {"outrank": True, "slots": 16}, ("first_after", 19.2), "tokens", versus={"outrank": True}),
    ),
    stream_group="questions",
    long_group="contracts",
    default_cursor=("first_after", 10.0),
)

REAL = Story(
    key="real_traffic",
    title="Real traffic",
    icon=":material/public:",
    teaser="Production request lengths from Mooncake's public trace: long prompts and short ones on one "
           "engine. Which stall does real traffic hit, and what does mixed chunk cost it?",
    controls=(
        mixed_control(),
        chunk_control(),
        interval_control(),
        prefix_cache_control(),
        Control("speedup", "Arrival speed", "select", 0.1, setter("workload", "trace", "speedup"),
                (0.05, 0.1, 0.2, 0.5, 1.0), is_flag=False, fmt=lambda v: f"{v:g}× the trace",
                help="The trace's arrivals sped up or slowed down (gaps divided by this). At 1× one GPU "
                     "falls behind and every request queues."),
        Control("requests", "Requests", "select", 120, setter("workload", "trace", "max_requests"),
                (60, 120, 200, 300), is_flag=False,
                help="The first N requests of the bundled 300-request head; the line under the settings "
                     "says how many it keeps and drops."),
        *common_controls(),
        *cost_controls(),
        mix_control(),
    ),
    headlines=(
        Headline("Longest pause, any reply", "requests", "max_itl_s", "max"),
        Headline("Median reply's longest pause", "requests", "max_itl_s", "p50",
                 help="Each reply's longest gap between two tokens; the median over replies."),
        Headline("p95 first token", "requests", "ttft_s", "p95"),
        Headline("p99 gap between tokens", "requests", "itl_s", "p99"),
    ),
    tour=(
        TourStep("Real prompts", "{now:requests.num_requests} requests from Mooncake's public conversation "
                 "trace, arrivals slowed to a tenth: about half of the prompts are 8,192 tokens or longer, "
                 "some above 32k. Replies stream between them.",
                 {}, ("at", 60.0), "passes"),
        TourStep("A burst of long prompts", "At about 330 s several long prompts arrive together. Prefill "
                 "wins: all of their chunks run back to back, and the replies already streaming get no token "
                 "until the last one is done (purple) — {now:requests.max_itl_s.max} on the defaults.",
                 {}, ("first_after", 331.0), "tokens"),
        TourStep("Flip mixed chunk", "The longest pause drops from {before:requests.max_itl_s.max} to "
                 "{now:requests.max_itl_s.max}, about one chunk pass; the p95 first token barely moves "
                 "({before:requests.ttft_s.p95} → {now:requests.ttft_s.p95}).", {"mixed": True},
                 ("first_after", 331.0), "headline"),
        TourStep("The price", "The p99 gap grows ({before:requests.itl_s.p99} → {now:requests.itl_s.p99}): "
                 "the stall is now spread as one chunk-sized gap per chunk, so more gaps are medium-sized. "
                 "{trap} Chunk size sets that size — try 2,048.",
                 {"mixed": True}, ("first_after", 331.0), "itl"),
        TourStep("Prefix reuse", "Mooncake's trace names each prompt's 512-token blocks (hash_ids): a "
                 "chat's next turn repeats the blocks of the turns before it, and many prompts open with "
                 "the same system-prompt block. SGLang's radix cache keeps a finished request's KV until "
                 "the pool needs the room (least recently used first), so a repeated block is not computed "
                 "again: {before:requests.prefix_cache_share} of these prompt tokens. Little, because the "
                 "trace's head is a cold start: most chats are on their first turn, and a turn that comes "
                 "back minutes later may find its blocks evicted by the traffic in between. With the cache "
                 "off (--disable-radix-cache) the p95 first token goes {before:requests.ttft_s.p95} → "
                 "{now:requests.ttft_s.p95}.",
                 {"prefix_cache": False}, ("at", 60.0), "headline"),
    ),
    stream_group="requests",
    long_group="requests",
)

STORIES: dict[str, Story] = {s.key: s for s in (FORTY, OTHER_STALL, RUSH, REAL)}
