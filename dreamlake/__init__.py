"""dreamlake: an agent-drivable provisioning engine.

The code lives in the top-level folders ``engine/``, ``stacks/``, ``templates/``,
``cli/`` and ``controlplane/``, installed as ``dreamlake.engine`` and so on.
"""

__version__ = "0.1.0"
