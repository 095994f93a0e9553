"""Real traffic: production request lengths from Mooncake's public trace, under the story toggles."""

from app import widgets as ui
from app.stories import REAL as story
from app.timeline import timeline_ui

values, current = ui.story_ui(story)
ui.stalls_apart_ui(current)
timeline_ui(story, current)
ui.itl_ui(story, current)
ui.export_ui(story, current)
ui.simplifications_ui()
ui.url_state(story, values)
