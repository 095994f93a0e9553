"""Your server: paste a log and see its timeline and which stall it shows, simulate it; or load a request trace."""

from app import server_ui as ui
from app.widgets import simplifications_ui

values = ui.page_header_ui()
if ui.view_ui() == "log":
    source = ui.log_source_ui()
    if source is not None:
        name, text = source
        read = ui.read_log_or_stop(name, text)
        ui.verdict_ui(read)
        ui.resolved_settings_ui(read)
        ui.line_counts_ui(read)
        ui.log_timeline_ui(read, text)
        ui.diagnosis_ui(read)
        ui.simulate_log_ui(read, values)
else:
    source = ui.trace_source_ui()
    if source is not None:
        name, data = source
        ui.trace_options_ui()
        trace = ui.load_trace_or_stop(name, data, values)
        ui.mix_ui(trace, name, values["long"])
        ui.trace_run_ui(trace, values)
simplifications_ui()
ui.share_ui(values)
