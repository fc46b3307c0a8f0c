"""The lean wire models: the cheap checks agree with the pydantic mirror, invalid
input raises pydantic's own ValidationError, and what they print is what pydantic
would print."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
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
    """The converters' types (each annotation compiled once per process, read with the
    run-time forms of ``contract.forms``) are ``typing.get_type_hints``'s of the same
    declarations read with typing's own forms, for every wire class of the engine."""
    import typing

    import dreamlake.engine.contract.result
    import dreamlake.engine.world.record  # noqa: F401 - the modules declaring wire classes
    from dreamlake.engine.contract import forms
    from dreamlake.engine.contract.wire import Wire, _hints, _is_any, _parts

    def typed(t: Any) -> Any:  # a run-time form as typing's own
        origin, args = _parts(t)
        if t is forms.Any:
            return typing.Any
        if origin is forms.Literal:
            return typing.Literal[args]
        if origin is forms.Annotated:
            return typing.Annotated[(typed(args[0]), *args[1:])]
        if origin is forms.Union:
            return typing.Union[tuple(typed(a) for a in args)]  # noqa: UP007
        return t

    def shape(t: Any) -> Any:  # comparable whichever forms made it
        origin, args = _parts(t)
        if origin is None:
            return "Any" if _is_any(t) else t
        return getattr(origin, "name", origin), tuple(shape(a) for a in args)

    seen, todo = [], list(Wire.__subclasses__())
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    assert len(seen) > 10
    for cls in seen:
        module = vars(sys.modules[cls.__module__])
        own = {k: typed(v) for k, v in module.items() if isinstance(v, forms.Form | forms.Alias)}
        own.update(Literal=typing.Literal, Annotated=typing.Annotated, Any=typing.Any)
        own.update(ClassVar=typing.ClassVar, Callable=Callable)  # Wire's own, for checkers
        want = typing.get_type_hints(cls, include_extras=True, localns=own)
        got = {k: shape(v) for k, v in _hints(cls).items()}
        assert got == {k: shape(want[k]) for k in cls._fields}, cls


def test_annotations_evaluate_as_eval_does_plain_names_uncompiled() -> None:
    """Every wire class's annotation is what ``eval`` makes of it in the class's
    module and namespace; a name or a name ``| None`` (most of the contract's) is
    looked up, never compiled."""
    import sys

    import dreamlake.engine.contract.result
    import dreamlake.engine.world.record  # the modules declaring wire classes
    from dreamlake.engine.contract import wire

    seen, todo = [], list(wire.Wire.__subclasses__())
    while todo:
        cls = todo.pop()
        seen.append(cls)
        todo.extend(cls.__subclasses__())
    texts = 0
    for cls in seen:
        module = vars(sys.modules[cls.__module__])
        namespace = dict(vars(cls))
        for text in cls.__dict__.get("__annotations__", {}).values():  # noqa: RUF063
            if "ClassVar" in text:
                continue
            texts += 1
            assert wire._evaluated(text, module, namespace) == eval(text, module, namespace)
    assert texts > 50
    for text in ("str", "int | None", "Claim | None", "NextAction | None", "ProviderStatus"):
        wire._COMPILED.pop(text, None)
        module = vars(dreamlake.engine.contract.result)
        assert wire._evaluated(text, module, {}) == eval(text, module, {})
        assert text not in wire._COMPILED
    assert wire._evaluated("list[str] | None", {}, {}) == (list[str] | None)
    assert "list[str] | None" in wire._COMPILED


def test_the_contract_reads_its_annotations_without_typing() -> None:
    """A result built, checked and printed, and a provider record read, import no
    ``typing`` (5 ms of CPU on every status): the declarations' forms at run time
    are ``contract.forms``'."""
    code = (
        "import sys\n"
        "from dreamlake.engine.contract.result import ProviderLifecycleResult, STATUSES\n"
        "from dreamlake.engine.world.record import ProviderRecord\n"
        "r = ProviderLifecycleResult(status='ready', provider='x', server='', namespace='d',\n"
        "    next_action={'kind': 'run', 'command': 'dreamlake provider apply -n x'},\n"
        "    plan={'add': 1, 'change': 0, 'destroy': 0}, outputs={'a': 1})\n"
        "r.to_json()\n"
        "ProviderRecord(name='x', vendor='local', backend='terraform', template_version=1,\n"
        "    engine_version='0.1.0', settings={'a': 1})\n"
        "assert 'ready' in STATUSES\n"
        "print('typing' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "False"
