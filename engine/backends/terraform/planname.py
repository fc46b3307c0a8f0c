"""The names of the saved plan files in a provider's terraform folder.

A leaf module: ``status`` reads the saved plan's record by this name without
importing the argv builders (``tfexec``), which re-export both names.
"""

PLAN_FILE = "tfplan"
META_FILE = f"{PLAN_FILE}.meta.json"  # the saved plan's record (``planfile``)
DESTROY_PLAN_FILE = "destroy.tfplan"
# The refresh-only plan a drift check saves (and removes once read), and the
# drift record beside the plan record (``tfplan.meta.json``).
DRIFT_PLAN_FILE = "drift.tfplan"
DRIFT_FILE = "tfplan.drift.json"
