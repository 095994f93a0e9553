"""The forty replies: forty streams mid-reply, a 100k-token log arrives. Mixed chunk on or off."""

from app import widgets as ui
from app.stories import FORTY as story
from app.timeline import timeline_ui

values, current = ui.story_ui(story)
timeline_ui(story, current)
ui.itl_ui(story, current)
ui.stalls_apart_ui(current)
ui.export_ui(story, current)
ui.simplifications_ui()
ui.url_state(story, values)
