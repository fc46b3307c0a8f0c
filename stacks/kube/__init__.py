"""``dreamlake.stacks.kube``: the EKS Pulumi program and its config model.

``program`` needs ``pulumi_aws`` and ``pulumi_kubernetes`` (the ``pulumi-clouds``
extra); ``Config`` does not.
"""

from .program import DECISIONS, Config, ConfigError, load_config, main, program

__all__ = ["DECISIONS", "Config", "ConfigError", "load_config", "main", "program"]
