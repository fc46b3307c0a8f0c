"""dreamlake.stacks — Pulumi programs, one package per vendor.

Each ``dreamlake.stacks.<vendor>`` exposes ``Config`` (a pydantic model: the
template's decision keys plus settings with defaults, validators mirroring the
terraform ``validation`` blocks), ``program(config)`` (an inline Pulumi program
for your own Automation API code) and ``main()`` (reads ``Config`` from the stack
config). Importing a vendor package does not import ``pulumi`` or a cloud SDK.

    from dreamlake.stacks.local import Config, program
"""

VENDORS = ("local", "ec2", "gce", "kube")

__all__ = ["VENDORS"]
