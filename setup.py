"""Map the top-level folders into the ``dreamlake`` import namespace.

``engine/`` installs as ``dreamlake.engine``, ``cli/`` as ``dreamlake.cli`` and so
on, so nothing installs a top-level package called ``cli`` or ``engine``.
"""

from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).parent
FOLDERS = ("engine", "stacks", "templates", "cli", "controlplane")


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = ["dreamlake"]
    package_dir: dict[str, str] = {"dreamlake": "dreamlake"}
    for folder in FOLDERS:
        for init in sorted((ROOT / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(ROOT)
            name = "dreamlake." + ".".join(rel.parts)
            packages.append(name)
            package_dir[name] = rel.as_posix()
    return packages, package_dir


packages, package_dir = _packages()
setup(packages=packages, package_dir=package_dir)
