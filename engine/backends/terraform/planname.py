"""The names of the saved plan files in a provider's terraform folder.

A leaf module: ``status`` reads the saved plan's record by this name without
importing the argv builders (``tfexec``), which re-export both names.
"""

PLAN_FILE = "tfplan"
DESTROY_PLAN_FILE = "destroy.tfplan"
