"""The forty replies: forty streams mid-reply, a 100k-token log arrives. Mixed chunk on or off."""

from app.story.exports import export_ui
from app.story.link import url_state
from app.story.sections import itl_ui, playback_ui, stalls_apart_ui
from app.story.timeline import timeline_ui
from app.story.top import story_ui
from app.ui.simplifications import simplifications_ui
from engine_model import STORIES

story = STORIES["forty_replies"]

values, current = story_ui(story)
timeline_ui(story, current)
playback_ui(story, current)
itl_ui(story, current)
stalls_apart_ui(current, story=story)
export_ui(story, current, values)
simplifications_ui()
url_state(story, values)
