"""The PD section's URL parameter names: plain strings, no Streamlit, so the presentation layer (the PD
figure, the slides) reads the same names the page writes. app.state re-exports them with the other URL
names."""

PD_ON, PD_PRESET, PD_CAP = "pd", "preset", "cap"  # the PD section: shown or not, which preset, decode KV cap
PD_PREFILL_WORKERS, PD_DECODE_WORKERS = "pworkers", "dworkers"
PD_BASE = "base"  # the PD section's comparison on the same GPUs without PD (app.pd.presets.BASELINES)
PD_TP = "wtp"  # the PD workers' TP (0: the story's GPUs split between the workers)
PD_PARAMS = (PD_ON, PD_PRESET, PD_CAP, PD_PREFILL_WORKERS, PD_DECODE_WORKERS, PD_TP, PD_BASE)
