"""``dreamlake.stacks.ec2``: the EC2 Pulumi program and its config model.

``program`` needs ``pulumi_aws`` (the ``pulumi-clouds`` extra); ``Config`` does not.
"""

from .program import DECISIONS, Config, ConfigError, load_config, main, program

__all__ = ["DECISIONS", "Config", "ConfigError", "load_config", "main", "program"]
