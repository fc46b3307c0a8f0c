"""The engine's plain records are standard frozen dataclasses: ``dataclasses.asdict``,
``dataclasses.fields``, ``inspect.signature`` and ``dataclasses.replace`` work on
them, as they did not on the hand-written ``@frozen`` records they replace."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import pytest

RECORDS = [
    ("dreamlake.engine.backends.base", "InfraState"),
    ("dreamlake.engine.backends.base", "PlanOutcome"),
    ("dreamlake.engine.backends.base", "ApplyOutcome"),
    ("dreamlake.engine.backends.base", "DestroyOutcome"),
    ("dreamlake.engine.backends.terraform.location", "StateLocation"),
    ("dreamlake.engine.backends.terraform.lockinfo", "LockProbe"),
    ("dreamlake.engine.backends.terraform.planfile", "PlanRecord"),
    ("dreamlake.engine.backends.terraform.planfile", "Freshness"),
    ("dreamlake.engine.backends.terraform.statefile", "StateFile"),
    ("dreamlake.engine.daemon.host", "DaemonHost"),
    ("dreamlake.engine.daemon.key", "DaemonKey"),
    ("dreamlake.engine.world.derive", "Observation"),
    ("dreamlake.engine.world.derive", "Derived"),
    ("dreamlake.engine.world.intent", "Intent"),
    ("dreamlake.engine.world.lakeshore", "ControlPlane"),
    ("dreamlake.engine.world.paths", "Root"),
    ("dreamlake.engine.world.paths", "ProviderPaths"),
    ("dreamlake.engine.remote.base", "CommandResult"),
    ("dreamlake.engine.scan.result", "ScanResult"),
    ("dreamlake.engine.world.vendors", "Decision"),
    ("dreamlake.engine.world.vendors", "Template"),
]


@pytest.mark.parametrize(("module", "name"), RECORDS)
def test_each_record_is_a_frozen_dataclass_with_a_real_signature(module: str, name: str) -> None:
    cls: Any = getattr(importlib.import_module(module), name)
    parameters = list(inspect.signature(cls).parameters)
    assert getattr(cls, "__dataclass_params__").frozen  # noqa: B009 - mypy narrows is_dataclass
    assert parameters == [f.name for f in dataclasses.fields(cls) if f.init]


def test_asdict_and_replace_work_on_a_record() -> None:
    from dreamlake.engine.world.lakeshore import ControlPlane

    cp = ControlPlane(url="http://127.0.0.1:7878", namespace="ns", token="t", source="env")
    assert dataclasses.asdict(cp) == {
        "url": "http://127.0.0.1:7878",
        "namespace": "ns",
        "token": "t",
        "source": "env",
        "ca": None,
    }
    moved = dataclasses.replace(cp, namespace="other")
    assert moved.namespace == "other" and cp.namespace == "ns"
    with pytest.raises(dataclasses.FrozenInstanceError):
        cp.url = "x"  # type: ignore[misc]


def test_there_is_no_second_record_declaration() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("dreamlake.engine.frozen")
