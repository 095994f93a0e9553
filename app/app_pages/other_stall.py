"""The other stall: the KV pool fills, running requests are retracted and re-prefilled later."""

from app import widgets as ui
from app.stories import OTHER_STALL as story
from app.timeline import timeline_ui

ui.page_header(story)
ui.tour_ui(story)
values = ui.settings_ui(story)
current, baseline = ui.runs_or_stop(story, values)
ui.resolved_ui(current)
ui.headline_ui(story, current, baseline)
ui.stalls_apart_ui(current, expanded=True)
timeline_ui(story, current)
ui.itl_ui(story, current)
ui.export_ui(story, current)
ui.simplifications_ui()
ui.url_state(story, values)
