"""Run a Pulumi program file under the Pulumi SDK's own mocks (``set_mocks``, with the
cloud API TEST DOUBLE of ``mock_stack.py``) and print, as JSON, every resource it
registered (type, name, URN, parent, provider, inputs, state), the stack exports,
each component's outputs (the program's ``COMPONENTS``, name → component, when it
has one) and what it printed.

    python run_program.py PROGRAM.py [PROGRAM.py ...] '{"aws:region": "us-west-2", ...}'

With more than one program, each runs in turn under mocks of its own and the
output is a JSON list of their results.

A program that drives the Automation API (``auto.create_or_select_stack`` with an
inline program) gets :class:`StackDouble`, a TEST DOUBLE for the stack the pulumi
CLI would run: ``up()`` runs the inline program under the same mocks and answers
with its exports as the real ``UpResult.outputs`` does.

The SDK keeps its runtime settings in globals, so the tests run this in a child
process (programs run in one are each given fresh mocks).
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys
from types import SimpleNamespace
from typing import Any

import pulumi
from mock_stack import CloudAPIDouble, Recorder
from pulumi import automation as auto
from pulumi.runtime import set_mocks
from pulumi.runtime.sync_await import _sync_await


class StackDouble:
    """TEST DOUBLE for an Automation API stack (the pulumi CLI cannot run here)."""

    def __init__(self, program: Any, exported: dict[str, Any]) -> None:
        self.program = program
        self.exported = exported

    def up(self, **_kw: Any) -> Any:
        self.program()
        outputs = {
            k: auto.OutputValue(_sync_await(pulumi.Output.from_input(v).future()), False)
            for k, v in self.exported.items()
        }
        return SimpleNamespace(outputs=outputs)


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
    real_stack = auto.create_or_select_stack

    def create_or_select_stack(*_a: Any, program: Any, **_kw: Any) -> StackDouble:
        return StackDouble(program, exported)

    auto.create_or_select_stack = create_or_select_stack  # type: ignore[assignment]
    result: dict[str, Any] = {"error": None}
    printed = io.StringIO()

    @pulumi.runtime.test
    def check() -> Any:
        with contextlib.redirect_stdout(printed):
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
    finally:  # the next program starts from the SDK's own functions
        pulumi.export = real_export  # type: ignore[assignment]
        auto.create_or_select_stack = real_stack  # type: ignore[assignment]
    for r in monitor.seen:
        r["inputs"], r["state"] = kept.get(r["name"] + "|" + r["type"], (None, None))
    result["resources"] = monitor.seen
    result["printed"] = printed.getvalue()
    return result


def main() -> None:
    *programs, config = sys.argv[1:]
    results = [run(program, json.loads(config)) for program in programs]
    print(json.dumps(results[0] if len(programs) == 1 else results, default=str))


if __name__ == "__main__":
    main()
