"""The lean wire models: the cheap checks agree with the pydantic mirror, invalid
input raises pydantic's own ValidationError, and what they print is what pydantic
would print."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from dreamlake.engine.contract.result import (
    Blocking,
    Claim,
    ProviderLifecycleResult,
    Run,
    json_schema,
)
from dreamlake.engine.contract.wire import mirror
from dreamlake.engine.world.record import ProviderRecord
from pydantic import ValidationError

FULL: dict[str, Any] = {
    "status": "needs_input",
    "provider": "aws-demo",
    "vendor": "kube",
    "server": "http://127.0.0.1:7878",
    "namespace": "default",
    "dir": "/p/.dream/providers/aws-demo",
    "files": ["/p/a", "/p/b"],
    "blocking": [
        {"key": "region", "reason": "unset", "file": "/p/t.tfvars", "line": 3, "observed": ["x"]},
        {"key": "vpc", "reason": "invalid", "message": "ünïcode ✓"},
    ],
    "plan": {"add": 1, "change": 0, "destroy": 2},
    "claim": {"live": 1, "gone": 0, "instances": ["i-1"], "workers": [{"instanceId": "i-1"}]},
    "degraded": ["no-probe"],
    "nextAction": {"kind": "edit_then_continue", "file": "/p/t.tfvars", "command": "c"},
    "lock": {"state": "stale", "who": "me"},
    "template": {"vendor": "kube", "version": 1, "latest": 2},
    "outputs": {"worker_host": "h", "nested": {"a": [1, None]}},
}


def test_wire_json_is_the_pydantic_json_key_for_key() -> None:
    lean = ProviderLifecycleResult.model_validate(FULL)
    model = mirror(ProviderLifecycleResult).model_validate(FULL)
    theirs = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    theirs["nextAction"] = model.next_action.model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    assert json.dumps(lean.to_wire()) == json.dumps(theirs)
    assert ProviderLifecycleResult.model_validate(json.loads(lean.to_json())) == lean


@pytest.mark.parametrize(
    "bad",
    [
        {"status": "dancing"},
        {"blocking": [{"key": "k", "reason": "maybe"}]},
        {"plan": {"add": -1, "change": 0, "destroy": 0}},
        {"nextAction": {"kind": "dance", "command": "x"}},
        {"nextAction": None},  # null only for connected
        {"surprise": 1},  # unknown keys are refused
    ],
)
def test_invalid_input_raises_pydantics_validation_error(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ProviderLifecycleResult.model_validate({**FULL, **bad})
    with pytest.raises(ValidationError):
        ProviderLifecycleResult(**{**FULL, **bad})


def test_lax_input_is_coerced_as_pydantic_would() -> None:
    """What the cheap checks do not accept, the mirror may still coerce."""
    p = ProviderLifecycleResult.model_validate(
        {**FULL, "plan": {"add": "3", "change": 0, "destroy": 0}}
    )
    assert p.plan is not None and p.plan.add == 3


def test_values_are_frozen_and_copies_are_new() -> None:
    b = Blocking(key="k", reason="unset")
    with pytest.raises(TypeError):
        b.key = "other"  # type: ignore[misc]
    c = b.model_copy(update={"observed": ["x"]})
    assert c.observed == ["x"] and b.observed is None and c != b
    assert hash(Run(command="x")) == hash(Run(command="x"))


def test_nested_dicts_and_aliases_are_accepted() -> None:
    c = Claim(live=1, gone=0, workers=[{"instanceId": "i-1", "queues": ["gpu"]}])
    assert c.workers is not None and c.workers[0].instance_id == "i-1"


def test_record_keeps_unknown_keys() -> None:
    r = ProviderRecord.model_validate(
        {"name": "a", "vendor": "local", "templateVersion": 1, "engineVersion": "x", "later": 1}
    )
    assert r.model_extra == {"later": 1}
    assert json.loads(r.to_json())["later"] == 1
    with pytest.raises(ValidationError):
        ProviderRecord.model_validate({"name": "a", "vendor": "local"})


def test_schema_comes_from_the_declarations() -> None:
    schema = json_schema()
    assert schema["properties"]["nextAction"]["anyOf"][0]["discriminator"]["propertyName"] == "kind"


def test_status_path_imports_neither_pydantic_nor_typer(tmp_path: Any) -> None:
    code = (
        "import sys; from dreamlake.cli.entry import main; "
        f"main(['provider', 'status', '-n', 'lab', '--json', '--dream-dir', {str(tmp_path)!r}]); "
        "print(sorted(m for m in ('pydantic', 'typer', 'rich', 'click', 'urllib.request') "
        "if m in sys.modules), file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stderr.strip().splitlines()[-1] == "[]"
    assert json.loads(out.stdout)["kind"] == "unknown_provider"


def test_model_dump_json_is_what_pydantic_writes() -> None:
    lean = ProviderLifecycleResult.model_validate(FULL)
    model = mirror(ProviderLifecycleResult).model_validate(FULL)
    for kw in ({}, {"indent": 2, "by_alias": True}, {"exclude_none": True, "by_alias": True}):
        assert lean.model_dump_json(**kw) == model.model_dump_json(**kw)


def test_field_types_are_what_typing_resolves() -> None:
    """The converters' types (each annotation compiled once per process) are
    ``typing.get_type_hints``'s, for every wire class of the engine."""
    import typing

    import dreamlake.engine.contract.result
    import dreamlake.engine.world.record  # noqa: F401 - the modules declaring wire classes
    from dreamlake.engine.contract.wire import Wire, _hints

    seen, todo = [], list(Wire.__subclasses__())
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    assert len(seen) > 10
    for cls in seen:
        want = typing.get_type_hints(cls, include_extras=True)
        assert _hints(cls) == {k: want[k] for k in cls._fields}, cls
