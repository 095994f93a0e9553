"""Ten o'clock rush: short questions all morning, six 120k-token contracts at ten.

The single-engine story runs now; when the engine has a PD model (`Scenario.pd`), the page adds
single engine vs PD, the decode allocation policy and the upstream replica preset (app.pd_ui).
"""

from app import pd_ui
from app import widgets as ui
from app.stories import RUSH as story
from app.timeline import timeline_ui

values, current = ui.story_ui(story)
timeline_ui(story, current)
ui.itl_ui(story, current)
ui.stalls_apart_ui(current)
pd_params = pd_ui.deferred_allocation_ui(values, current)
ui.export_ui(story, current)
ui.simplifications_ui()
ui.url_state(story, values, pd_params)
