"""Real traffic: production request lengths from Mooncake's public trace, under the story toggles."""

from app.story.exports import export_ui
from app.story.link import url_state
from app.story.sections import itl_ui, playback_ui, stalls_apart_ui
from app.story.timeline import timeline_ui
from app.story.top import story_ui
from app.ui.mix import mix_story
from app.ui.simplifications import simplifications_ui
from engine_model import STORIES

story = mix_story(STORIES["real_traffic"])  # on the link's request mix, if any

values, current = story_ui(story)
stalls_apart_ui(current, story=story)
timeline_ui(story, current)
playback_ui(story, current)
itl_ui(story, current)
export_ui(story, current, values)
simplifications_ui()
url_state(story, values)
