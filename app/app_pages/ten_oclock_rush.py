"""Ten o'clock rush: short questions all morning, six 120k-token contracts at ten.

The single-engine story, then single engine vs PD, the decode allocation policy and the upstream replica
preset (app.pd).
"""

from app.pd.section import deferred_allocation_ui
from app.story.exports import export_ui
from app.story.link import url_state
from app.story.sections import itl_ui, playback_ui, stalls_apart_ui
from app.story.timeline import timeline_ui
from app.story.top import story_ui
from app.ui.mix import mix_story
from app.ui.simplifications import simplifications_ui
from engine_model import STORIES

story = mix_story(STORIES["ten_oclock_rush"])  # on the link's request mix, if any

values, current = story_ui(story)
timeline_ui(story, current)
playback_ui(story, current)
itl_ui(story, current)
stalls_apart_ui(current, story=story)
pd_params = deferred_allocation_ui(values, current)
export_ui(story, current, values)
simplifications_ui()
url_state(story, values, pd_params)
