"""The engine's plain records. Those on the ``status``, ``plan`` and ``apply`` paths are
``@record()`` classes (``engine/settings/records.py``), which behave as the frozen
dataclass of the same declaration without importing ``dataclasses``: each is held
here against that dataclass, built from its own fields (signature, repr, equality,
hash, frozen-ness, ``replace``), and ``dataclasses.asdict``, ``fields`` and
``replace`` work on it as on that dataclass; the others are standard frozen
dataclasses."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import pytest
from dreamlake.engine.settings.records import FrozenInstanceError, replace

# the records made on the status, plan and apply paths
RECORDS = [
    ("dreamlake.engine.backends.base", "InfraState"),
    ("dreamlake.engine.backends.base", "PlanOutcome"),
    ("dreamlake.engine.backends.base", "ApplyOutcome"),
    ("dreamlake.engine.backends.base", "DestroyOutcome"),
    ("dreamlake.engine.backends.terraform.backend", "_PlanRun"),
    ("dreamlake.engine.backends.terraform.initmark", "InitCheck"),
    ("dreamlake.engine.backends.terraform.location", "StateLocation"),
    ("dreamlake.engine.backends.terraform.lockinfo", "LockProbe"),
    ("dreamlake.engine.backends.terraform.planfile", "PlanRecord"),
    ("dreamlake.engine.backends.terraform.planfile", "Freshness"),
    ("dreamlake.engine.backends.terraform.planjson", "StreamPlan"),
    ("dreamlake.engine.backends.terraform.required", "Requirement"),
    ("dreamlake.engine.backends.terraform.runner", "Completed"),
    ("dreamlake.engine.backends.terraform.statefile", "StateFile"),
    ("dreamlake.engine.backends.terraform.uijson", "StreamSummary"),
    ("dreamlake.engine.daemon.host", "DaemonHost"),
    ("dreamlake.engine.daemon.key", "DaemonKey"),
    ("dreamlake.engine.scan.result", "ScanResult"),
    ("dreamlake.engine.settings.endpoints", "_Layer"),
    ("dreamlake.engine.settings.endpoints", "AwsSettings"),
    ("dreamlake.engine.settings.endpoints", "TerraformSettings"),
    ("dreamlake.engine.settings.endpoints", "Settings"),
    ("dreamlake.engine.world.derive", "Observation"),
    ("dreamlake.engine.world.derive", "Derived"),
    ("dreamlake.engine.world.intent", "Intent"),
    ("dreamlake.engine.world.lakeshore", "ControlPlane"),
    ("dreamlake.engine.world.paths", "Root"),
    ("dreamlake.engine.world.paths", "ProviderPaths"),
    ("dreamlake.engine.world.vendors", "Decision"),
    ("dreamlake.engine.world.vendors", "Template"),
]

DATACLASSES = [
    ("dreamlake.engine.backends.driftrecord", "DriftRecord"),
    ("dreamlake.engine.remote.base", "CommandResult"),
    ("dreamlake.engine.remote.ssh", "SSHTarget"),
    ("dreamlake.engine.settings.dreamrc", "DreamRc"),
]


def _twin(cls: Any) -> Any:
    """The frozen dataclass of ``cls``'s declaration (same name, fields, defaults)."""
    spec = cls.__record__
    annotations = inspect.get_annotations(cls)
    made = []
    for name, f in spec.fields.items():
        options: dict[str, Any] = {"repr": f.repr, "compare": f.compare}
        if f.default_factory is not None:
            options["default_factory"] = f.default_factory
        elif name not in spec.unset:
            options["default"] = f.default
        made.append((name, annotations[name], dataclasses.field(**options)))
    twin = dataclasses.make_dataclass(cls.__name__, made, frozen=True, eq="__eq__" in cls.__dict__)
    twin.__qualname__ = cls.__qualname__
    return twin


def _arguments(cls: Any) -> dict[str, Any]:
    """A value for every field without a default."""
    return {name: f"v-{name}" for name in cls.__record__.unset if name not in _factories(cls)}


def _factories(cls: Any) -> set[str]:
    return {n for n, f in cls.__record__.fields.items() if f.default_factory is not None}


@pytest.mark.parametrize(("module", "name"), RECORDS)
def test_each_record_behaves_as_the_frozen_dataclass_of_its_declaration(
    module: str, name: str
) -> None:
    cls: Any = getattr(importlib.import_module(module), name)
    twin = _twin(cls)
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))
    args = _arguments(cls)
    one, other = cls(**args), twin(**args)
    assert repr(one) == repr(other)
    assert (one == replace(one)) is (other == dataclasses.replace(other))
    if "__eq__" in cls.__dict__:
        assert one == replace(one)
        assert (one != replace(one)) is False
        try:
            assert hash(one) == hash(other)
        except TypeError:  # a dict or list field: neither is hashable
            with pytest.raises(TypeError):
                hash(other)
    else:
        assert one != replace(one) and hash(one) == object.__hash__(one)
    with pytest.raises(AttributeError):
        one.anything = 1
    # to dataclasses itself, the record is that dataclass
    assert dataclasses.is_dataclass(cls) and dataclasses.is_dataclass(one)
    assert [(f.name, f.type, f.repr, f.compare) for f in dataclasses.fields(cls)] == [
        (f.name, f.type, f.repr, f.compare) for f in dataclasses.fields(twin)
    ]
    assert dataclasses.asdict(one) == dataclasses.asdict(other)
    assert dataclasses.astuple(one) == dataclasses.astuple(other)
    copied = dataclasses.replace(one)
    assert type(copied) is cls and repr(copied) == repr(one)
    assert getattr(cls, "__dataclass_params__").frozen  # noqa: B009 - mypy narrows is_dataclass


@pytest.mark.parametrize(("module", "name"), DATACLASSES)
def test_records_off_those_paths_are_frozen_dataclasses(module: str, name: str) -> None:
    cls: Any = getattr(importlib.import_module(module), name)
    assert getattr(cls, "__dataclass_params__").frozen  # noqa: B009 - mypy narrows is_dataclass
    assert list(inspect.signature(cls).parameters) == [f.name for f in dataclasses.fields(cls)]


def test_replace_and_frozen_on_a_record() -> None:
    from dreamlake.engine.world.lakeshore import ControlPlane

    cp = ControlPlane(url="http://127.0.0.1:7878", namespace="ns", token="t", source="env")
    moved = replace(cp, namespace="other")
    assert moved.namespace == "other" and cp.namespace == "ns"
    assert moved == ControlPlane("http://127.0.0.1:7878", "other", "t", "env")
    with pytest.raises(FrozenInstanceError):
        cp.url = "x"  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del cp.url  # type: ignore[misc]
    with pytest.raises(TypeError):
        replace(cp, nothing=1)
