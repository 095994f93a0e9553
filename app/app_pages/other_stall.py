"""The other stall: the KV pool fills, running requests are retracted and re-prefilled later."""

from app import widgets as ui
from app.stories import OTHER_STALL as story
from app.timeline import timeline_ui

values, current = ui.story_ui(story)
ui.stalls_apart_ui(current, expanded=True)
timeline_ui(story, current)
ui.itl_ui(story, current)
ui.export_ui(story, current)
ui.simplifications_ui()
ui.url_state(story, values)
