"""``dreamlake.stacks.local``: the local Pulumi program and its config model.

from dreamlake.stacks.local import Config, program
program(Config(workdir="/var/lib/nymph", queues=["default"], worker_name="lab-box"))
"""

from .program import DECISIONS, Config, ConfigError, daemon_args, load_config, main, program

__all__ = ["DECISIONS", "Config", "ConfigError", "daemon_args", "load_config", "main", "program"]
