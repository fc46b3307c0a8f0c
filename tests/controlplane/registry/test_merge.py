"""The launch-time merge as a table: one row per rule of the spec."""

from __future__ import annotations

from typing import Any

import pytest
from dreamlake.controlplane.registry.merge import deep_merge, merge_launch, split_run_config
from dreamlake.controlplane.registry.secret_values import UnknownSecret, expand, resolve_markers

S = {"$secret": "aws"}

DEEP_MERGE: list[tuple[str, Any, Any, Any]] = [
    ("disjoint keys union", {"a": 1}, {"b": 2}, {"a": 1, "b": 2}),
    ("runconfig wins a scalar", {"a": 1}, {"a": 2}, {"a": 2}),
    (
        "objects merge recursively",
        {"o": {"x": 1, "y": 1}},
        {"o": {"y": 2, "z": 3}},
        {"o": {"x": 1, "y": 2, "z": 3}},
    ),
    (
        "three levels deep",
        {"a": {"b": {"c": 1, "d": 1}}},
        {"a": {"b": {"d": 2}}},
        {"a": {"b": {"c": 1, "d": 2}}},
    ),
    ("arrays concatenate", {"l": [1, 2]}, {"l": [3]}, {"l": [1, 2, 3]}),
    (
        "arrays de-duplicate, order kept",
        {"l": ["a", "b"]},
        {"l": ["b", "c", "a"]},
        {"l": ["a", "b", "c"]},
    ),
    (
        "arrays of objects de-duplicate",
        {"l": [{"k": 1}]},
        {"l": [{"k": 1}, {"k": 2}]},
        {"l": [{"k": 1}, {"k": 2}]},
    ),
    ("duplicates within one side collapse", {"l": [1, 1]}, {"l": []}, {"l": [1]}),
    ("scalar over object: runconfig wins", {"o": {"x": 1}}, {"o": "flat"}, {"o": "flat"}),
    ("object over scalar: runconfig wins", {"o": "flat"}, {"o": {"x": 1}}, {"o": {"x": 1}}),
    ("array over scalar: runconfig wins", {"l": "one"}, {"l": ["two"]}, {"l": ["two"]}),
    ("null from runconfig wins a scalar", {"a": 1}, {"a": None}, {"a": None}),
    ("false is a value, not absence", {"a": True}, {"a": False}, {"a": False}),
    (
        "a secret marker is replaced, not merged",
        {"c": S},
        {"c": {"$secret": "other"}},
        {"c": {"$secret": "other"}},
    ),
    ("an object does not merge into a marker", {"c": S}, {"c": {"x": 1}}, {"c": {"x": 1}}),
    ("empty runconfig keeps provider", {"a": {"b": [1]}}, {}, {"a": {"b": [1]}}),
]


@pytest.mark.parametrize(
    ("why", "base", "over", "want"), DEEP_MERGE, ids=[r[0] for r in DEEP_MERGE]
)
def test_deep_merge(why: str, base: Any, over: Any, want: Any) -> None:
    before = repr((base, over))
    assert deep_merge(base, over) == want
    assert repr((base, over)) == before  # inputs untouched


def test_runner_side_fields_stay_on_the_runconfig() -> None:
    run = {
        "provider": "aws",
        "backend": "fabric",
        "runner": "docker",
        "image": "img",
        "resources": {"gpu": 1},
        "env": {"A": "1"},
        "tags": {"team": "ml"},
        "timeout_s": 60,
        "instance_type": "g5.xlarge",
    }
    kwargs, runner = split_run_config(run)
    assert kwargs == {"instance_type": "g5.xlarge"}
    assert runner == {
        "runner": "docker",
        "image": "img",
        "resources": {"gpu": 1},
        "env": {"A": "1"},
        "tags": {"team": "ml"},
        "timeout_s": 60,
    }


def test_merge_launch_output() -> None:
    spec = merge_launch(
        provider_name="aws-us-east",
        launcher="EC2",
        provider_kwargs={"region": "us-east-1", "sg": ["a"], "creds": S, "block": {"size": 10}},
        run_config={
            "provider": "aws-us-east",
            "region": "us-west-2",
            "sg": ["b", "a"],
            "block": {"iops": 3},
            "runner": "docker",
            "dispatch": "direct",
        },
        namespace="team-a",
    )
    assert spec.kwargs == {
        "region": "us-west-2",
        "sg": ["a", "b"],
        "creds": S,
        "block": {"size": 10, "iops": 3},
    }
    assert spec.tags == {
        "lakeshore": "true",
        "lakeshore-namespace": "team-a",
        "lakeshore-provider": "aws-us-east",
    }
    assert spec.run == {"runner": "docker"}
    assert spec.dispatch == "daemon"  # the provider's default; a RunConfig cannot change dispatch
    assert (
        merge_launch(
            provider_name="k",
            launcher="Kube",
            provider_kwargs={},
            run_config={},
            namespace="n",
            dispatch="daemon",
        ).dispatch
        == "daemon"
    )


def test_resolve_markers_expands_in_memory() -> None:
    store = {"aws": ("aws_keypair", "AKIA1:sec/ret"), "pw": ("password", "hunter2")}
    kwargs = {
        "creds": S,
        "list": [{"p": {"$secret": "pw"}}],
        "plain": "x",
        "not_marker": {"$secret": "pw", "x": 1},
    }
    out = resolve_markers(kwargs, store.get)
    assert out["creds"] == {"accessKeyId": "AKIA1", "secretAccessKey": "sec/ret"}
    assert out["list"] == [{"p": "hunter2"}]
    assert out["not_marker"] == {"$secret": "pw", "x": 1}  # two keys: not a marker
    assert kwargs["creds"] == S  # the input keeps its markers
    with pytest.raises(UnknownSecret) as exc:
        resolve_markers({"a": {"b": {"$secret": "gone"}}}, store.get)
    assert exc.value.path == "a.b" and "gone" in str(exc.value)
    assert expand("token", "t") == "t"
