"""Your server: paste a log and see its timeline and which stall it shows, its metrics beside it, simulate
it; load a request trace; or watch a running server's metrics live (when the app is started to allow it)."""

from app.server import log_ui, page, trace_ui
from app.server.live_ui import live_ui
from app.server.metrics_ui import metrics_ui
from app.server.simulate_ui import simulate_log_ui
from app.ui.simplifications import simplifications_ui

values = page.page_header_ui()
view = page.view_ui()
if view == "log":
    source = log_ui.log_source_ui()
    if source is not None:
        name, text = source
        read = log_ui.read_log_or_stop(name, text)
        log_ui.verdict_ui(read)
        log_ui.resolved_settings_ui(read)
        log_ui.line_counts_ui(read)
        log_ui.log_timeline_ui(read, text)
        log_ui.diagnosis_ui(read)
        metrics_ui(read, text)
        simulate_log_ui(read, values)
elif view == "live":
    live_ui()
else:
    source = trace_ui.trace_source_ui(values)
    if source is not None:
        name, data = source
        trace_ui.trace_options_ui()
        trace = trace_ui.load_trace_or_stop(name, data, values)
        trace_ui.mix_ui(trace, name, values["long"])
        trace_ui.trace_run_ui(trace, values, name)
simplifications_ui()
page.share_ui(values)
