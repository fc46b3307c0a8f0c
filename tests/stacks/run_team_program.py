"""Run a Pulumi program file under the Pulumi SDK's own mocks (``set_mocks``, with the
cloud API TEST DOUBLE of ``mock_stack.py``) and print, as JSON, every resource it
registered (type, name, URN, parent, provider, inputs, state), the stack exports and
each component's outputs (the program's ``COMPONENTS``: name → component).

    python run_team_program.py PROGRAM.py '{"aws:region": "us-west-2", ...}'

The SDK keeps its runtime settings in globals, so the tests run this in a child
process.
"""

from __future__ import annotations

import json
import runpy
import sys
from typing import Any

import pulumi
from mock_stack import CloudAPIDouble, Recorder
from pulumi.runtime import set_mocks


def run(program: str, config: dict[str, str]) -> dict[str, Any]:
    mocks = CloudAPIDouble()
    monitor = Recorder(mocks)
    set_mocks(mocks, project="platform", stack="prod", preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(config)
    kept: dict[str, tuple[Any, Any]] = {}
    original = mocks.new_resource

    def keep(args: Any) -> tuple[str, dict[str, Any]]:
        rid, state = original(args)
        kept[args.name + "|" + args.typ] = (args.inputs, state)
        return rid, state

    mocks.new_resource = keep  # type: ignore[method-assign]
    exported: dict[str, Any] = {}
    real_export = pulumi.export

    def export(key: str, value: Any) -> None:
        exported[key] = value
        real_export(key, value)

    pulumi.export = export  # type: ignore[assignment]
    result: dict[str, Any] = {"error": None}

    @pulumi.runtime.test
    def check() -> Any:
        scope = runpy.run_path(program, run_name="__main__")
        comps = scope.get("COMPONENTS") or {}
        outputs = {
            name: pulumi.Output.all(**c.outputs).apply(lambda v: v) for name, c in comps.items()
        }
        result["components"] = {name: {"type": c._type} for name, c in comps.items()}
        return pulumi.Output.all(pulumi.Output.all(**exported), pulumi.Output.all(**outputs)).apply(
            lambda v: result.update(exports=v[0], outputs=v[1])
        )

    try:
        check()
    except Exception as exc:  # reported to the test, which shows it
        result["error"] = f"{type(exc).__name__}: {exc}"
    for r in monitor.seen:
        r["inputs"], r["state"] = kept.get(r["name"] + "|" + r["type"], (None, None))
    result["resources"] = monitor.seen
    return result


def main() -> None:
    print(json.dumps(run(sys.argv[1], json.loads(sys.argv[2])), default=str))


if __name__ == "__main__":
    main()
