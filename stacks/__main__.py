"""The entry of the repository's Pulumi project (``Pulumi.yaml`` at the root):
runs the program of the vendor named by the stack config ``dreamlake:vendor``
(default ``local``), e.g. ``pulumi config set vendor ec2``.
"""

from __future__ import annotations

from importlib import import_module

from dreamlake.stacks import VENDORS


def run() -> None:
    import pulumi

    vendor = pulumi.Config().get("vendor") or "local"
    if vendor not in VENDORS:
        raise ValueError(f"dreamlake config: vendor: {vendor!r} is not one of {', '.join(VENDORS)}")
    import_module(f"dreamlake.stacks.{vendor}").main()


if __name__ == "__main__":
    run()
