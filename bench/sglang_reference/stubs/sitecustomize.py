# Loaded first in the driver and in sglang's scheduler process (this folder leads PYTHONPATH): the shared
# tool's hooks, then ours on top (priority_hooks.py). run_priority.py sets REFSIM_ACTIVE=1.
import os

if os.environ.get("REFSIM_ACTIVE") == "1":
    import priority_hooks  # noqa: F401  (imports the tool's refsim_hooks first, then adds ours)
