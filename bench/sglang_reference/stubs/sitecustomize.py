# Loaded first in the driver and in sglang's scheduler process (this folder leads PYTHONPATH): the shared
# tool's hooks, then ours on top (priority_hooks.py). run_priority.py sets REFSIM_ACTIVE=1.
import os

if os.environ.get("REFSIM_ACTIVE") == "1":
    import refsim_hooks  # noqa: F401  (the tool's post-import patches)
    import priority_hooks  # noqa: F401  (ours: preemptions and aborts recorded)
