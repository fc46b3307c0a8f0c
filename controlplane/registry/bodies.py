"""Typed request bodies of the registry routes, so ``/openapi.json`` documents each
one and a wrong shape gets a 422 naming the field (``loc``) and what is wrong.

The models check shapes; the service layer still checks meaning (a launcher's name,
secret markers, the immutable launcher) and says how to fix it. Every body also goes
through :func:`~dreamlake.controlplane.server.json_guard.refuse_nul` (no NUL in any
key or string, at any depth): PostgreSQL cannot store it, so no backend may.
"""

from __future__ import annotations

from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from ..server.json_guard import refuse_nul


class Body(BaseModel):
    """A registry body: camelCase keys exactly as the spec writes them, no NUL."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="before")
    @classmethod
    def _no_nul(cls, data: Any) -> Any:
        refuse_nul(data)
        return data

    def wire(self) -> dict[str, Any]:
        """The fields the caller sent (unset ones left out), under their wire names."""
        out = self.model_dump(by_alias=True, exclude_unset=True)
        if self.model_extra:
            out.update(self.model_extra)
        return out


class ProviderIn(Body):
    """``POST .../providers``: register a provider."""

    name: StrictStr = Field(description="Provider name: ^[a-z0-9][a-z0-9-]*$, at most 63 chars.")
    launcher: StrictStr = Field(description="EC2, GCE, Kube, SSH or SLURM (case-sensitive).")
    kwargs: dict[str, Any] | None = Field(
        None, description='Launcher arguments; {"$secret": NAME} marks a secret reference.'
    )
    dispatch: StrictStr | None = Field(None, description="direct or daemon (default by launcher).")
    tunnel: StrictStr | None = Field(None, max_length=255, description='A tunnel name; "" none.')
    hidden: StrictBool = Field(False, description="Leave out of default listings.")
    identity: StrictStr | None = Field(
        None,
        max_length=64,
        description="The lifecycle provider this row belongs to (its provider.json id).",
    )


class ProviderPatch(Body):
    """``PATCH .../providers/{name}``: ``kwargs`` replaces, ``kwargsPatch`` deep-merges
    (a null value deletes a key)."""

    kwargs: dict[str, Any] | None = None
    kwargs_patch: dict[str, Any] | None = Field(None, alias="kwargsPatch")
    dispatch: StrictStr | None = Field(None, description="direct, daemon, or null for the default.")
    tunnel: StrictStr | None = Field(None, max_length=255, description='A tunnel name; "" clears.')
    hidden: StrictBool | None = None
    identity: StrictStr | None = Field(
        None, max_length=64, description="Set once: the lifecycle provider this row belongs to."
    )
    launcher: Any = Field(
        None, description="Immutable: present only to be refused with how to change it."
    )


class SecretIn(Body):
    """``POST .../secrets``: a new secret. The value is encrypted and never returned."""

    name: StrictStr = Field(description="Secret name.")
    kind: StrictStr | None = Field(None, description="generic (default), aws_keypair, ...")
    value: StrictStr = Field(description="The plaintext; for structured kinds, its JSON text.")


class SecretPut(Body):
    """``PUT .../secrets/{name}``: create or replace; ``name``, when given, must match the URL."""

    name: StrictStr | None = None
    kind: StrictStr | None = None
    value: StrictStr


Number = StrictInt | StrictFloat


class RunConfigFields(Body):
    """The recognised RunConfig fields; any other key is kept as given (extras)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    backend: StrictStr | None = None
    runner: StrictStr | None = None
    image: StrictStr | None = None
    tags: dict[str, Any] | list[Any] | None = None
    resources: dict[str, Any] | None = None
    env: dict[str, Any] | None = None
    timeout_s: Number | None = Field(None, description="Seconds; a finite number.")
    provider: StrictStr | None = None


class ModeIn(RunConfigFields):
    """``POST .../modes``: a named RunConfig."""

    name: StrictStr
    namespace: StrictStr | None = Field(None, description="Ignored (the URL names it).")


class ModePatch(RunConfigFields):
    """``PATCH .../modes/{name}``: a JSON merge patch (null deletes a field)."""

    name: StrictStr | None = None
    namespace: StrictStr | None = None


class LaunchIn(Body):
    """``POST .../launch`` and ``.../launch/preview``: a stored mode, a RunConfig, or a
    mode with a RunConfig layered on top; ``provider`` overrides the one they name."""

    mode: StrictStr | None = None
    run_config: dict[str, Any] | None = Field(None, alias="runConfig")
    provider: StrictStr | None = None
