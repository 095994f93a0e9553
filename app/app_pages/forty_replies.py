"""The forty replies: forty streams mid-reply, a 100k-token log arrives. Mixed chunk on or off."""

from app import widgets as ui
from app.stories import FORTY as story
from app.timeline import timeline_ui

ui.page_header(story)
ui.tour_ui(story)
values = ui.settings_ui(story)
current, baseline = ui.runs_or_stop(story, values)
ui.resolved_ui(current)
ui.headline_ui(story, current, baseline)
timeline_ui(story, current)
ui.itl_ui(story, current)
ui.stalls_apart_ui(current)
ui.export_ui(story, current)
ui.simplifications_ui()
ui.url_state(story, values)
