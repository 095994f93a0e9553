"""One feasibility check for every entry point: TP must split the model as SGLang requires, the weights must
fit, the KV pool must hold the longest prompt; each refusal names the fix, and the fix runs."""

import subprocess
import sys

import pytest

from engine_model import STORIES, InputError, check_deployment, load_scenario, resolve, tp_help
from engine_model.deployment import tp_problem, tp_sizes
from engine_model.hardware import MODELS, kv_bytes_per_token, model
from engine_model.logs.parse import parse_log
from engine_model.logs.replay import scenario_from_log
from engine_model.stories import deployment_controls

from conftest import DATA

TP8_LOG = DATA / "sglang_logs_written" / "llama70b_tp8.log"
SEVENTY_ON_ONE_H100 = ("Llama-3.1-70B's bf16 weights (131 GiB) are 131.4 GiB per GPU at TP 1, and one H100 "
                       "SXM 80GB leaves 65.1 GiB for weights and KV cache")


def refusal(scenario) -> InputError:
    with pytest.raises(InputError) as error:
        check_deployment(scenario)
    return error.value


def test_tensor_parallel_must_split_the_heads_and_widths_as_sglang_asserts():
    assert tp_problem(model("qwen3-8b"), 3).startswith("Qwen3-8B's 32 attention heads do not split over TP 3")
    # 8 KV heads over TP 16: each head copied on two GPUs, which SGLang allows
    assert tp_problem(model("llama-3.1-70b"), 16) is None
    odd = model("llama-3.1-8b").model_copy(update={"num_heads": 48, "num_kv_heads": 6})
    assert "6 KV heads and TP 4: one must divide the other" in tp_problem(odd, 4)
    narrow = model("llama-3.1-8b").model_copy(update={"intermediate_size": 1000})
    assert "MLP width (intermediate_size) of 1,000 does not split over TP 16" in tp_problem(narrow, 16)
    assert [tp_sizes(model(m)) for m in ("llama-3.1-70b", "qwen3-235b-a22b", "qwen2.5-0.5b")] == [
        [1, 2, 4, 8], [1, 2, 4, 8], [1, 2]]  # 14 heads split over 2, not 4


def test_a_tp_that_does_not_split_the_heads_names_the_sizes_that_do():
    error = refusal(load_scenario("forty_replies", ["model.name=qwen3-8b", "hardware.tp_size=3"]))
    assert error.where == "hardware.tp_size" and error.problem.endswith("Fix: TP 1, 2, 4 or 8.")


def test_weights_that_do_not_fit_name_the_nearest_fixes_and_each_fix_runs():
    error = refusal(load_scenario("forty_replies", ["model.name=llama-3.1-70b"]))
    assert error.where == "deployment" and error.problem.startswith(SEVENTY_ON_ONE_H100)
    # one B200 would hold the weights but not the 100k log's KV, so the GPU it names is an MI300X; nvfp4 on
    # an H100 is SGLang's Marlin W4A16, and the fix says so
    assert error.problem.endswith(
        "Fix: TP 4 (4 × H100 SXM 80GB; hardware.tp_size=4), nvfp4 weights via Marlin W4A16 (4-bit weights, "
        "bf16 compute; --fp4-gemm-backend auto picks marlin on SM80–SM90; model.weight_dtype=nvfp4) or "
        "1 × MI300X 192GB (hardware.gpu=mi300x).")
    assert [fix.sets for fix in error.fixes] == [
        ["hardware.tp_size=4"], ["model.weight_dtype=nvfp4"], ["hardware.gpu=mi300x"]]
    for fix in error.fixes:
        check_deployment(load_scenario("forty_replies", ["model.name=llama-3.1-70b", *fix.sets]))


def test_a_pool_that_cannot_hold_the_longest_prompt_is_refused_with_the_fix():
    """70B on one B200 fits its weights but keeps 67,184 tokens of KV: SGLang would refuse the 100k log."""
    error = refusal(load_scenario("forty_replies", ["model.name=llama-3.1-70b", "hardware.gpu=b200"]))
    assert error.where == "KV pool"
    assert "the longest prompt, log's 100,000 tokens, needs more" in error.problem
    assert "Fix: TP 2 (2 × B200 180GB; hardware.tp_size=2), fp8 KV cache (model.kv_dtype=fp8)" in (
        error.problem)
    check_deployment(load_scenario("forty_replies", ["model.name=llama-3.1-70b", "hardware.gpu=b200",
                                                     "hardware.tp_size=2"]))
    error = refusal(load_scenario("forty_replies", ["engine.max_total_tokens=5000"]))
    assert error.problem.endswith("Fix: a KV pool of at least 100,007 tokens (engine.max_total_tokens), or a "
                                  "shorter prompt.")


def test_a_prompt_past_the_models_context_is_left_to_the_run_which_rejects_it():
    check_deployment(load_scenario("forty_replies", ["model.name=qwen3-8b"]))  # 40,960-token context


def test_a_pool_set_above_what_fits_is_capped_as_sglang_caps_it():
    res = resolve(load_scenario("forty_replies", ["engine.max_total_tokens=900000000"]))
    plain = resolve(load_scenario("forty_replies"))
    assert res.max_total_tokens == plain.max_total_tokens
    assert res.max_total_tokens_source.startswith("max_total_tokens 900,000,000 is more than fits")


@pytest.mark.parametrize("story", list(STORIES))
def test_every_story_runs_70b_at_tp8_on_h100_with_its_gpu_count(story):
    scenario = STORIES[story].scenario({**STORIES[story].defaults, "model": "llama-3.1-70b", "tp": 8})
    res = resolve(scenario)
    assert (res.model_name, res.gpu_name, res.tp_size) == ("Llama-3.1-70B", "H100 SXM 80GB", 8)
    # 80 layers x 1 KV head x 128 x 2 (K, V) x 2 bytes on each GPU
    assert res.kv_bytes_per_token == 40960 and res.kv_heads_per_gpu == 1


def test_the_story_page_refuses_what_the_check_refuses():
    story = STORIES["forty_replies"]
    with pytest.raises(InputError) as error:
        story.scenario({**story.defaults, "model": "llama-3.1-70b"})
    assert error.value.problem.startswith(SEVENTY_ON_ONE_H100)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


def test_the_cli_refuses_with_the_same_message_and_runs_the_fix():
    done = run_cli("-m", "engine_model", "run", "forty_replies", "--set", "model.name=llama-3.1-70b")
    assert done.returncode == 2 and done.stderr.startswith(f"error: deployment: {SEVENTY_ON_ONE_H100}")
    done = run_cli("-m", "engine_model", "run", "forty_replies", "--set", "model.name=llama-3.1-70b",
                   "--set", "hardware.tp_size=8")
    assert done.returncode == 0
    assert done.stdout.splitlines()[1].startswith(
        "  8 × H100 SXM 80GB, TP 8 · Llama-3.1-70B, bf16 weights, bf16 KV · KV pool ")
    assert "GiB on each of the 8 GPUs" in done.stdout


def test_the_figure_command_refuses_with_the_same_message(tmp_path):
    done = run_cli("-m", "app.present", "figure", "forty_replies", "--set", "model=llama-3.1-70b",
                   "--out", str(tmp_path / "f.html"))
    assert done.returncode == 2 and done.stderr.startswith(f"error: deployment: {SEVENTY_ON_ONE_H100}")


def test_a_log_replay_is_refused_with_the_same_message():
    text = TP8_LOG.read_text().replace("tp_size=8", "tp_size=1")
    with pytest.raises(InputError) as error:
        scenario_from_log(parse_log(text), load_scenario("forty_replies"))
    # the same check and words, on the log's own mem_fraction_static (0.85)
    assert error.value.where == "deployment" and error.value.problem.startswith(
        SEVENTY_ON_ONE_H100.replace("65.1 GiB", "66.7 GiB"))
    # TP 2 would hold the weights but not the log's 60,000-token document
    assert "Fix: TP 4 (4 × H100 SXM 80GB; hardware.tp_size=4)" in error.value.problem


def test_figure_set_threads_the_deployment_and_any_figure_into_the_page_it_opens():
    from app.present.grid import plan

    story = STORIES["forty_replies"]
    _, values, held = plan(story, ("mixed",), sets=("hardware.tp_size=8", "model=llama-3.1-70b",
                                                     "hardware.gpu_overrides.memory_gib=96", "kvdtype=fp8"))
    assert held == ()  # each --set became a control, so the page's settings line names it
    assert (values["tp"], values["model"], values["gpu.memory_gib"], values["kvdtype"]) == (
        8, "llama-3.1-70b", 96.0, "fp8")
    with pytest.raises(InputError, match=r"^--set hardware.gpu_overrides.memory_gib: expected a number"):
        plan(story, ("mixed",), sets=("hardware.gpu_overrides.memory_gib=0",))


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_tp_help_says_what_each_gpu_holds_of_a_tokens_kv_as_the_engine_counts_it(name):
    """The help claims TP splits every token's KV only where the engine's byte count shrinks with TP: GQA
    presets (down to one KV head per GPU), not MLA ones (the whole latent on every GPU)."""
    preset = MODELS[name]
    text = tp_help(preset)
    split = kv_bytes_per_token(preset, "bf16", 2) < kv_bytes_per_token(preset, "bf16", 1)
    assert ("1/TP of every token's KV heads" in text) == split, text
    assert ("whole compressed KV latent of every token" in text) == (preset.attention == "mla"), text
    assert preset.name in text


def test_the_page_draws_the_tp_help_of_the_model_chosen():
    """app.ui.deployment.model_help: the same control, its help for the model in the URL."""
    from app.ui.deployment import model_help
    controls = [c for c in deployment_controls() if c.where == "more"]
    for name in ("llama-3.1-70b", "deepseek-v3"):
        tp = next(c for c in model_help(controls, name) if c.key == "tp")
        assert tp.help == tp_help(MODELS[name])
        assert tp.options == next(c for c in controls if c.key == "tp").options
