"""Human gating: which lifecycle steps need a person's yes. A *set* of step actions.

The four gateable actions are ``provision``, ``deprovision``, ``suspend`` and
``resume``. A provider's set is the union (lossless: any combination is expressible)
of

* the root default: ``settings.gating`` in ``.dreamrc`` (``$DREAMRC``, else the
  nearest one walking up from the root, else ``~/.dreamrc``), or when it is not
  set, the vendor's default: the steps that spend or destroy *on that vendor*, as
  its ``TEMPLATE.json`` declares them (``steps``, see :func:`vendor_default`) —
  ``resume`` starts a stopped ``ec2`` / ``gce`` instance and its bill, and is gated
  there; on ``local`` / ``ssh`` it restarts a daemon on a host that is already
  there, and is not. A vendor that declares nothing gets the built-in
  :data:`DEFAULT` — ``provision`` and ``deprovision``;
* the provider's own ``gating`` in ``provider.json`` (identity-level policy).

What a gated step does, in the words a person is asked with, is the vendor's too
(:func:`step_words`): nobody is told an SSH host "spends money".

A provider can add gates to the root default, never remove them; a root that wants
fewer gates says so in its ``.dreamrc`` (``gating: []`` gates nothing).

The enum names of the stateful-lifecycle spec are accepted as aliases:
``PROVISION_ONLY``, ``SUSPEND_ONLY``, ``RESUME_ONLY`` (one-element sets), plus
``NONE`` and ``ALL``. One place checks a step against the set: :func:`is_gated`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from ..contract.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if not TYPE_CHECKING:  # the alias below at run time, without typing (contract/forms.py)
    from ..contract.forms import Literal
else:
    from typing import Literal
if TYPE_CHECKING:
    from typing import Any

    from ..world.vendors import Template

GateAction = Literal["provision", "deprovision", "suspend", "resume"]
ACTIONS: tuple[GateAction, ...] = ("provision", "deprovision", "suspend", "resume")
DEFAULT: frozenset[str] = frozenset({"provision", "deprovision"})
ALIASES: dict[str, frozenset[str]] = {
    "PROVISION_ONLY": frozenset({"provision"}),
    "SUSPEND_ONLY": frozenset({"suspend"}),
    "RESUME_ONLY": frozenset({"resume"}),
    "NONE": frozenset(),
    "ALL": frozenset(ACTIONS),
}


def parse_gating(value: Any, where: str = "gating") -> frozenset[str]:
    """A gating value as written (a list of actions/aliases, or one alias or action
    as a string) → the set of gated actions. Anything else is a UsageError."""
    items: Iterable[Any]
    if value is None:
        return frozenset()
    if isinstance(value, str):
        items = [value]
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:
        raise UsageError(
            f"{where} must be a list of steps ({', '.join(ACTIONS)}) or one of "
            f"{', '.join(ALIASES)}; got {value!r}"
        )
    out: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise UsageError(f"{where}: {item!r} is not a step name")
        word = item.strip()
        if word in ALIASES:
            out |= ALIASES[word]
        elif word.lower() in ACTIONS:
            out.add(word.lower())
        else:
            raise UsageError(
                f"{where}: unknown step {word!r}; steps are {', '.join(ACTIONS)} "
                f"(aliases: {', '.join(ALIASES)})"
            )
    return frozenset(out)


def merge(
    root_default: frozenset[str] | None,
    provider: frozenset[str] | None,
    vendor: frozenset[str] | None = None,
) -> frozenset[str]:
    """The effective set: the root default ∪ the provider's own. Without a root
    default: the vendor's default (``vendor``), else the built-in :data:`DEFAULT`."""
    fallback = DEFAULT if vendor is None else vendor
    base = fallback if root_default is None else root_default
    return frozenset(base | (provider or frozenset()))


def is_gated(step: str, gating: frozenset[str]) -> bool:
    """Whether ``step`` needs a person's yes. Steps that are not gateable (``wait``,
    ``none``, ``recover``) never are."""
    return step in gating


VERB_STEPS: dict[str, str] = {
    "apply": "provision",
    "destroy": "deprovision",
    "delete": "deprovision",
    "suspend": "suspend",
    "resume": "resume",
}
"""The lifecycle step each verb performs (for a vendor with the stateful lifecycle)."""


def verb_step(verb: str, stateful: bool = True) -> str | None:
    """The step ``verb`` performs; without the stateful lifecycle suspending is
    deprovisioning and resuming is provisioning. None: a verb that is no step
    (``plan``, ``status``, ``connect``, ``create`` spend and destroy nothing)."""
    step = VERB_STEPS.get(verb)
    if not stateful and step == "suspend":
        return "deprovision"
    if not stateful and step == "resume":
        return "provision"
    return step


STEP_WORDS: dict[str, str] = {
    "provision": "applying creates infrastructure, which spends money",
    "deprovision": "destroying removes the infrastructure and what it holds",
    "suspend": "suspending stops it; its state is kept",
    "resume": "resuming starts it again; running costs money again",
}
"""What a gated step does, in the words a person is asked with (a vendor that
declares no words of its own)."""


def _declared(template: Template | None) -> dict[str, Any]:
    """TEMPLATE.json's ``steps``: ``{step: {"gated": bool, "does": str}}``."""
    if template is None:
        return {}
    steps = template.raw.get("steps")
    if steps is None:
        return {}
    where = f"TEMPLATE.json of {template.vendor!r}: steps"
    if not isinstance(steps, Mapping):
        raise UsageError(f"{where} must be an object of {', '.join(ACTIONS)}; got {steps!r}")
    for step, decl in steps.items():
        if step not in ACTIONS:
            raise UsageError(f"{where}: unknown step {step!r}; steps are {', '.join(ACTIONS)}")
        if not isinstance(decl, Mapping):
            raise UsageError(f"{where}.{step} must be an object; got {decl!r}")
        if not isinstance(decl.get("gated", False), bool):
            raise UsageError(f"{where}.{step}.gated must be true or false")
        if not isinstance(decl.get("does", ""), str):
            raise UsageError(f"{where}.{step}.does must be a sentence")
    return dict(steps)


def vendor_default(template: Template | None) -> frozenset[str]:
    """The steps that need a person's yes by default on this vendor: TEMPLATE.json's
    ``steps.<step>.gated`` (what the step costs there), the built-in :data:`DEFAULT`
    for a step (or a vendor) that does not say."""
    declared = _declared(template)
    out = set()
    for step in ACTIONS:
        decl = declared.get(step)
        if decl is not None and "gated" in decl:
            if decl["gated"]:
                out.add(step)
        elif step in DEFAULT:
            out.add(step)
    return frozenset(out)


def step_words(step: str, template: Template | None = None) -> str:
    """What ``step`` does on this vendor (``steps.<step>.does`` in its TEMPLATE.json),
    else :data:`STEP_WORDS`'s general sentence."""
    decl = _declared(template).get(step)
    if decl is not None and decl.get("does"):
        return str(decl["does"])
    return STEP_WORDS.get(step, step)


def dreamrc_default(root: Path) -> frozenset[str] | None:
    """``settings.gating`` from the ``.dreamrc`` a run reads; None when not set."""
    from ..world.paths import nearest_dreamrc

    rc = nearest_dreamrc(root)
    if rc is None:
        return None
    from ..settings.readers import read_text

    try:
        text = read_text(rc)  # bounded; a FIFO or a device is not read
    except (OSError, ValueError):
        return None
    if "gating" not in text:
        return None  # nothing for us; skip the YAML parse
    import yaml

    from ..settings.yamlload import tolerant_loader

    try:
        data = yaml.load(text, Loader=tolerant_loader())
    except yaml.YAMLError as exc:
        raise UsageError(f"{rc} is not valid YAML: {exc}") from exc
    settings = data.get("settings") if isinstance(data, Mapping) else None
    if not isinstance(settings, Mapping) or "gating" not in settings:
        return None
    return parse_gating(settings["gating"], f"{rc}: settings.gating")


def effective_gating(
    root: Path,
    provider_gating: list[str] | None,
    where: str,
    template: Template | None = None,
) -> frozenset[str]:
    """The gated steps for one provider of ``root`` (``provider_gating``: provider.json's;
    ``template``: its vendor's, whose default applies when ``.dreamrc`` sets none)."""
    own = None if provider_gating is None else parse_gating(provider_gating, f"{where}: gating")
    return merge(dreamrc_default(root), own, vendor_default(template))


__all__ = [
    "ACTIONS",
    "ALIASES",
    "DEFAULT",
    "STEP_WORDS",
    "VERB_STEPS",
    "GateAction",
    "dreamrc_default",
    "effective_gating",
    "is_gated",
    "merge",
    "parse_gating",
    "step_words",
    "vendor_default",
    "verb_step",
]
