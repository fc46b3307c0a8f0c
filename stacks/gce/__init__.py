"""``dreamlake.stacks.gce``: the GCE Pulumi program and its config model.

``program`` needs ``pulumi_gcp`` (the ``pulumi-clouds`` extra); ``Config`` does not.
"""

from .program import DECISIONS, GPU_TYPES, Config, ConfigError, load_config, main, program

__all__ = ["DECISIONS", "GPU_TYPES", "Config", "ConfigError", "load_config", "main", "program"]
