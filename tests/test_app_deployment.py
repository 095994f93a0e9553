"""The buyer's deployment on every page: Llama-3.1-70B at TP 8 on H100 from the URL, with the GPU count and
the KV pool per GPU and in all on screen; a refused combination names the fix and its link keeps it;
every figure of the GPU and the model is editable and travels in the URL; a TP 8 70B log replays as 70B
on 8 GPUs."""

from pathlib import Path

import pytest
from markup import cards_of
from streamlit.testing.v1 import AppTest
from unfold import unfold

from app.server.simulate_ui import SIMULATE

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")
TP8_LOG = Path(__file__).resolve().parent / "data" / "sglang_logs_written" / "llama70b_tp8.log"
STORY_PAGES = ("forty_replies", "other_stall", "ten_oclock_rush", "real_traffic")


def open_page(page: str, params: dict, opened: bool = False) -> AppTest:
    """`page` as a link with `params` opens it; `opened`: every fold open (tests/unfold.py)."""
    at = AppTest.from_file(MAIN, default_timeout=240)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return unfold(at) if opened else at


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption)


def param(at: AppTest, key: str):
    value = at.query_params.get(key)
    return value[0] if isinstance(value, list) else value


@pytest.mark.parametrize("page", [*STORY_PAGES, "compare"])
def test_each_page_runs_70b_at_tp8_on_h100_from_the_url_and_shows_the_gpu_count(page):
    at = open_page(page, {"model": "llama-3.1-70b", "tp": "8"})  # the ten o'clock page: its PD section too
    assert not at.error, [e.value for e in at.error]
    said = captions(at)
    assert "**8 × H100 SXM 80GB, TP 8** · **Llama-3.1-70B** (bf16 weights, bf16 KV)" in said
    assert "GiB on each of the 8 GPUs" in said
    assert "GiB in all (each GPU holds 1 KV head of every token)" in said
    titles = [e.label for e in at.expander]
    assert any("8 × H100 SXM 80GB, TP 8 · Llama-3.1-70B, bf16 weights, bf16 KV" in t for t in titles), titles
    assert (param(at, "model"), param(at, "tp")) == ("llama-3.1-70b", "8")  # the link keeps the deployment


def test_a_refused_combination_names_the_fix_and_its_link_keeps_it():
    at = open_page("forty_replies", {}, opened=True)
    at.selectbox(key="forty_replies.model").set_value("llama-3.1-70b")
    at.selectbox(key="forty_replies.gpu").set_value("l40s").run()
    assert not at.exception
    [message] = [e.value for e in at.error]  # 70B weights do not fit one L40S
    assert message.startswith("**This combination cannot run.** `deployment`: Llama-3.1-70B's bf16 weights")
    assert "one L40S 48GB leaves" in message and "Fix: TP 8 (8 × L40S 48GB; hardware.tp_size=8)" in message
    assert not cards_of(at)  # no numbers from a run that could not happen
    assert (param(at, "model"), param(at, "gpu")) == ("llama-3.1-70b", "l40s")
    at.selectbox(key="forty_replies.tp").set_value(8).run()  # the fix it names runs
    assert not at.error and cards_of(at) and param(at, "tp") == "8"


def test_a_link_to_a_refused_combination_says_why_instead_of_dropping_the_model():
    at = open_page("forty_replies", {"model": "llama-3.1-70b"}, opened=True)
    assert at.selectbox(key="forty_replies.model").value == "llama-3.1-70b"
    assert "Fix: TP 4 (4 × H100 SXM 80GB" in at.error[0].value and param(at, "model") == "llama-3.1-70b"


def test_the_gpu_figures_and_model_shapes_are_editable_and_in_the_url():
    at = open_page("forty_replies", {"gpu": "rubin", "gpu.memory_gib": "300", "model.num_layers": "40"},
                   opened=True)
    assert at.number_input(key="forty_replies.gpu.memory_gib").value == 300
    assert "(edited: memory_gib 300; model num_layers 40)" in captions(at)
    at.number_input(key="forty_replies.gpu.memory_tbps").set_value(30.0).run()
    assert param(at, "gpu.memory_tbps") == "30" and "memory_tbps 30" in captions(at)
    at.button(key="forty_replies.figures.reset").click().run()
    assert "edited:" not in captions(at) and param(at, "gpu.memory_gib") is None


def test_the_tp8_70b_log_replays_as_70b_on_8_gpus_and_a_picked_tp1_is_refused():
    at = open_page("your_server", {"log": "paste"})
    at.session_state[SIMULATE] = True  # the replay's fold, opened
    at.text_area(key="your_server.paste").input(TP8_LOG.read_text()).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "**8 × H100 SXM 80GB, TP 8** · **Llama-3.1-70B** (bf16 weights, bf16 KV)" in captions(at)
    unmatched = next(i.value for i in at.info if "could not match" in i.value)
    assert "the GPU: a log does not name it" in unmatched
    at.selectbox(key="your_server.rtp").set_value(1).run()
    [message] = [e.value for e in at.error]
    assert message.startswith(
        "**This server cannot be simulated.** `deployment`: Llama-3.1-70B's bf16 weights")


def pd_rows(at: AppTest) -> dict[str, int]:
    """The PD section's table: each deployment and its GPUs."""
    table = next(df.value for df in at.dataframe if "deployment" in df.value.columns)
    return dict(zip(table["deployment"], table["GPUs"], strict=True))


def checklist_row(at: AppTest, start: str) -> tuple[str, str]:
    table = next(t.value for t in at.table if t.value.index.name == "check")
    row = next(i for i in table.index if i.startswith(start))
    return table.loc[row, "reads"], table.loc[row, "behind it"]


def test_the_buyers_pd_on_their_8_gpus_shows_what_runs_and_why_prefill_complete_cannot():
    """Llama-3.1-70B on 8 H100s at TP 8, weighing PD: 1 + 1 workers of TP 4 on the same 8 GPUs, beside one
    TP 8 engine; prefill_complete is SGLang's refusal with the fix, and the checklist's row says the same."""
    from engine_model import load_scenario
    from engine_model.pd.attention import SGLANG_WORDS, refusal

    at = open_page("ten_oclock_rush", {"model": "llama-3.1-70b", "tp": "8", "wtp": "4", "base": "one"})
    # prefill_complete runs on its fix, TP 1 workers on the same 8 GPUs, beside early (the table and verdict)
    assert pd_rows(at) == {"the story's engine": 8, "one engine, TP 8": 8, "PD, early": 8,
                           "PD, prefill_complete with the fix": 8}
    [warning] = [w.value for w in at.warning if "cannot run here" in w.value]
    assert warning.startswith("**PD under prefill_complete cannot run here.** `pd.prefill.tp_size`: SGLang "
                              f'refuses to start the prefill worker: "{SGLANG_WORDS}"')
    assert "Fix: workers of TP 1 on the same 8 GPUs: 4 prefill + 4 decode" in warning
    sets = ["model.name=llama-3.1-70b", "pd.prefill.tp_size=4", "pd.decode.tp_size=4", "hardware.tp_size=8"]
    expected = refusal(load_scenario("ten_oclock_rush_pd", sets))
    reads, behind = checklist_row(at, "(d4) Attention TP")
    assert reads == "✗ fail" and behind.endswith(expected.problem) and expected.problem in warning
    assert param(at, "wtp") == "4"  # the link keeps the workers' TP


def test_pd_that_cannot_run_at_all_still_shows_the_engines_on_the_same_gpus():
    """70B at bf16 on 1-GPU workers: PD is refused, each policy with the fixes that run under it, and one TP 8
    engine on the same 8 GPUs still runs beside the story's."""
    at = open_page("ten_oclock_rush", {"model": "llama-3.1-70b", "tp": "8", "wtp": "1", "pworkers": "4",
                                       "dworkers": "4", "base": "one"})
    early, late = [w.value for w in at.warning if "cannot run here" in w.value]
    for warning, policy in ((early, "early"), (late, "prefill_complete")):
        assert warning.startswith(f"**PD under {policy} cannot run here.** `pd.prefill`: Llama-3.1-70B's "
                                  "bf16 weights")
    # every fix passes the whole check: both roles' TP under early (the decode workers' weights do not fit TP
    # 1 either), no larger TP under prefill_complete (SGLang refuses attention TP above 1 there)
    assert "Fix: TP 4 (4 × H100 SXM 80GB; pd.prefill.tp_size=4, pd.decode.tp_size=4)" in early
    assert "Fix: nvfp4 weights via Marlin W4A16" in late and "tp_size" not in late
    # each policy runs on its first fix that keeps the 8 GPUs (nvfp4 weights), never on a fix that takes
    # more GPUs (early's TP 4 workers: 32)
    assert pd_rows(at) == {"the story's engine": 8, "one engine, TP 8": 8, "PD, early with the fix": 8,
                           "PD, prefill_complete with the fix": 8}
    runs = next(m.value for m in at.markdown if m.value.startswith("**What runs here**"))
    assert "4 prefill × TP 1 + 4 decode × TP 1 on 8 × H100 SXM 80GB: cannot run (above)" in runs
    assert checklist_row(at, "(a) Long prompts")[0] == "✓ pass"  # the same requests, from the engines' run


def test_every_pd_and_without_pd_scenario_is_checked_like_every_entry_point():
    """405B at fp8 on 1-GPU workers: the PD split and the engines on its GPUs are refused with the check's
    one message (its fix names the role's key), not run silently or left to fail inside the run."""
    from app.pd.presets import baseline, preset_data, shape, split
    from engine_model import STORIES, InputError

    values = {**STORIES["ten_oclock_rush"].defaults, "model": "llama-3.1-405b", "wdtype": "fp8", "tp": 8}
    data = preset_data("rush", values)
    with pytest.raises(InputError) as error:
        split(data, "early", 0, 1, 1, worker_tp=1)
    assert error.value.where == "pd.prefill" and "Fix: " in error.value.problem
    assert "378.0 GiB per GPU at TP 1" in error.value.problem
    assert error.value.problem.endswith("Fix: TP 8 (8 × H100 SXM 80GB; pd.prefill.tp_size=8, "
                                        "pd.decode.tp_size=8).")
    with pytest.raises(InputError) as error:
        baseline(data, "engines", shape(data, "early", 0, 1, 1, worker_tp=1))
    assert error.value.where == "deployment" and "Fix: " in error.value.problem
    assert baseline(data, "one", shape(data, "early", 0, 4, 4, worker_tp=1)).hardware.tp_size == 8  # it fits
