""".dreamrc: local providers and RunConfigs, read without a control-plane round trip.

A ``.dreamrc`` is YAML. Provider entries are mappings tagged with their launcher —
``!providers.SSH``, ``!providers.SLURM``, ``!providers.EC2``, ``!providers.GCE``,
``!providers.Kube``; any other tag is a hard parse error naming file and line.

    providers:                      # named providers
      lab: !providers.SSH
        host: lab.internal
        user: ops
    provider: lab                   # the root is the default RunConfig
    runner: process
    modes:                          # named RunConfigs (alias: mode:)
      gpu:
        provider: aws               # a name, or an inline tagged mapping
        instance_type: g5.xlarge
    lakeshore:                      # where the control plane is
      url: http://127.0.0.1:7878
      namespace: default
      token_file: ~/.config/lakeshore/token
      ca: ~/.config/lakeshore/ca.crt  # the CA an https url is verified with

Resolution, first hit wins: ``--dreamrc PATH``, ``$DREAMRC``, ``./.dreamrc`` walking up
from cwd, ``$HOME/.dreamrc``, a server pull (only when ``LAKESHORE_URL`` or a token is
configured), the on-disk cache of the last pull, then an empty config.

Standard library + PyYAML only (the pull goes over ``http_json``'s ``http.client``):
this module sits on the CLI's fast path.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..contract.errors import UsageError
from ..world.paths import dreamrc_above
from .fsutil import atomic_write
from .readers import FileProblem, read_json, read_text
from .yamlload import bounded

FILENAME = ".dreamrc"
ENV_PATH = "DREAMRC"
LAUNCHERS: tuple[str, ...] = ("SSH", "SLURM", "EC2", "GCE", "Kube")
TAGS: tuple[str, ...] = tuple(f"!providers.{name}" for name in LAUNCHERS)
DEFAULT_DISPATCH: dict[str, str] = {
    "EC2": "daemon",
    "GCE": "daemon",
    "Kube": "direct",
    "SSH": "direct",
    "SLURM": "direct",
}
RESERVED_ROOT_KEYS: tuple[str, ...] = ("modes", "mode", "providers", "lakeshore", "settings")
LAKESHORE_KEYS: tuple[str, ...] = ("url", "namespace", "token_file", "ca")
CACHE_APP = "lakeshore"


class DreamrcError(UsageError):
    """A ``.dreamrc`` that cannot be used; ``path`` and ``line`` say where."""

    kind = "dreamrc"

    def __init__(self, message: str, *, path: Path | None = None, line: int | None = None):
        where = f"{path}:{line}: " if path is not None and line else (f"{path}: " if path else "")
        super().__init__(where + message)
        self.path = path
        self.line = line


@dataclass(frozen=True)
class ProviderSpec:
    """One provider as ``.dreamrc`` (or a server pull) defines it."""

    name: str
    launcher: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    dispatch: str = "direct"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "launcher": self.launcher,
            "kwargs": copy.deepcopy(self.kwargs),
            "dispatch": self.dispatch,
        }


@dataclass(frozen=True)
class DreamRc:
    """A resolved ``.dreamrc``. ``source`` is one of ``--dreamrc``, ``$DREAMRC``,
    ``cwd``, ``home``, ``server``, ``cache``, ``empty``."""

    source: str
    path: Path | None = None
    default: dict[str, Any] = field(default_factory=dict)
    modes: dict[str, dict[str, Any]] = field(default_factory=dict)
    providers: dict[str, ProviderSpec] = field(default_factory=dict)
    lakeshore: dict[str, Any] = field(default_factory=dict)

    def run_config(self, mode: str | None = None) -> dict[str, Any]:
        """The default RunConfig, or a named mode (an unknown name is a UsageError)."""
        if mode is None:
            return copy.deepcopy(self.default)
        if mode not in self.modes:
            known = ", ".join(sorted(self.modes)) or "none"
            raise UsageError(f"no mode {mode!r} in {self.where()} (known: {known})")
        return copy.deepcopy(self.modes[mode])

    def provider(self, name: str) -> ProviderSpec | None:
        return self.providers.get(name)

    def where(self) -> str:
        return str(self.path) if self.path else self.source

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "path": str(self.path) if self.path else None,
            "default": self.default,
            "modes": self.modes,
            "providers": {n: p.to_dict() for n, p in self.providers.items()},
            "lakeshore": self.lakeshore,
        }


# --- parsing -----------------------------------------------------------------


class _Tagged:
    """A ``!providers.X`` mapping before it has a name."""

    __slots__ = ("kwargs", "launcher", "line")

    def __init__(self, launcher: str, kwargs: dict[str, Any], line: int) -> None:
        self.launcher = launcher
        self.kwargs = kwargs
        self.line = line


def _make_loader(path: Path | None) -> type[yaml.SafeLoader]:
    class Loader(bounded(yaml.SafeLoader)):  # type: ignore[misc]
        def construct_undefined(self, node: yaml.Node) -> Any:
            known = ", ".join(TAGS)
            raise DreamrcError(
                f"unknown tag {node.tag!r}; the known tags are {known}",
                path=path,
                line=node.start_mark.line + 1,
            )

    def provider_constructor(launcher: str):  # type: ignore[no-untyped-def]
        def construct(loader: yaml.SafeLoader, node: yaml.Node) -> _Tagged:
            line = node.start_mark.line + 1
            if isinstance(node, yaml.ScalarNode) and node.value == "":
                return _Tagged(launcher, {}, line)
            if not isinstance(node, yaml.MappingNode):
                raise DreamrcError(
                    f"!providers.{launcher} must tag a mapping of kwargs", path=path, line=line
                )
            data = loader.construct_mapping(node, deep=True)
            return _Tagged(launcher, {str(k): v for k, v in data.items()}, line)

        return construct

    for launcher in LAUNCHERS:
        Loader.add_constructor(f"!providers.{launcher}", provider_constructor(launcher))
    Loader.add_constructor(None, Loader.construct_undefined)  # type: ignore[arg-type]
    return Loader


def _spec(name: str, tagged: _Tagged, path: Path | None) -> ProviderSpec:
    kwargs = dict(tagged.kwargs)
    kwargs.pop("name", None)
    dispatch = kwargs.pop("dispatch", None) or DEFAULT_DISPATCH[tagged.launcher]
    if dispatch not in ("direct", "daemon"):
        raise DreamrcError(
            f"provider {name!r}: dispatch must be direct or daemon, not {dispatch!r}",
            path=path,
            line=tagged.line,
        )
    _no_tags_inside(kwargs, path, tagged.line)
    return ProviderSpec(name=name, launcher=tagged.launcher, kwargs=kwargs, dispatch=dispatch)


def _no_tags_inside(value: Any, path: Path | None, line: int) -> None:
    if isinstance(value, _Tagged):
        raise DreamrcError(
            "a !providers tag is only allowed on an entry under providers: or on provider:",
            path=path,
            line=value.line,
        )
    if isinstance(value, Mapping):
        for v in value.values():
            _no_tags_inside(v, path, line)
    elif isinstance(value, list):
        for v in value:
            _no_tags_inside(v, path, line)


def _run_config(
    data: Mapping[str, Any],
    default_name: str,
    providers: dict[str, ProviderSpec],
    path: Path | None,
) -> dict[str, Any]:
    out = dict(data)
    prov = out.get("provider")
    if isinstance(prov, _Tagged):
        name = str(prov.kwargs.get("name") or default_name)
        if name in providers:
            raise DreamrcError(
                f"inline provider {name!r} clashes with a provider of the same name",
                path=path,
                line=prov.line,
            )
        providers[name] = _spec(name, prov, path)
        out["provider"] = name
    elif prov is not None and not isinstance(prov, str):
        raise DreamrcError(
            "provider: must be a provider name or a !providers.<Launcher> mapping", path=path
        )
    for key, value in out.items():
        if key != "provider":
            _no_tags_inside(value, path, 0)
    return out


def parse_dreamrc(text: str, *, path: Path | None = None, source: str = "file") -> DreamRc:
    """Parse ``.dreamrc`` text. Errors are ``DreamrcError`` with the file and line."""
    try:
        data = yaml.load(text, Loader=_make_loader(path))
    except DreamrcError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise DreamrcError(
            f"not valid YAML: {exc.problem or exc.context}",
            path=path,
            line=mark.line + 1 if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise DreamrcError(f"not valid YAML: {exc}", path=path) from None
    except RecursionError:  # the loader's bounds stop this first; belt and braces
        raise DreamrcError("nested too deeply to read", path=path) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DreamrcError(
            "the top level must be a mapping (the default RunConfig)", path=path, line=1
        )

    providers: dict[str, ProviderSpec] = {}
    raw_providers = data.get("providers") or {}
    if not isinstance(raw_providers, dict):
        raise DreamrcError("providers: must map names to !providers.<Launcher> entries", path=path)
    for name, entry in raw_providers.items():
        if not isinstance(entry, _Tagged):
            raise DreamrcError(
                f"providers.{name} needs a launcher tag, e.g. `{name}: !providers.SSH`",
                path=path,
            )
        providers[str(name)] = _spec(str(name), entry, path)

    if "modes" in data and "mode" in data:
        raise DreamrcError("use one of modes: or mode: (they are aliases), not both", path=path)
    raw_modes = data.get("modes", data.get("mode")) or {}
    if not isinstance(raw_modes, dict):
        raise DreamrcError("modes: must map mode names to RunConfigs", path=path)
    modes: dict[str, dict[str, Any]] = {}
    for name, body in raw_modes.items():
        if body is None:
            body = {}
        if not isinstance(body, dict):
            raise DreamrcError(f"mode {name!r} must be a mapping (a RunConfig)", path=path)
        modes[str(name)] = _run_config(body, str(name), providers, path)

    lakeshore = data.get("lakeshore") or {}
    if not isinstance(lakeshore, dict):
        raise DreamrcError(
            "lakeshore: must be a mapping with url, namespace, token_file", path=path
        )
    unknown = sorted(set(lakeshore) - set(LAKESHORE_KEYS))
    if unknown:
        raise DreamrcError(
            f"lakeshore: unknown key(s) {', '.join(unknown)}; known: {', '.join(LAKESHORE_KEYS)}",
            path=path,
        )
    lakeshore = {k: str(v) for k, v in lakeshore.items() if v is not None}
    for file_key in ("token_file", "ca"):  # paths: relative to the .dreamrc
        if file_key in lakeshore:
            tf = Path(os.path.expanduser(lakeshore[file_key]))
            if not tf.is_absolute() and path is not None:
                tf = path.parent / tf
            lakeshore[file_key] = str(tf)

    root = {k: v for k, v in data.items() if k not in RESERVED_ROOT_KEYS}
    default = _run_config(root, "default", providers, path)
    return DreamRc(
        source=source,
        path=path,
        default=default,
        modes=modes,
        providers=providers,
        lakeshore=lakeshore,
    )


def read_dreamrc(path: Path, *, source: str = "file") -> DreamRc:
    try:
        text = read_text(path)
    except FileProblem as exc:
        raise DreamrcError(exc.reason, path=path) from None
    except OSError as exc:
        raise DreamrcError(f"cannot read: {exc.strerror or exc}", path=path) from None
    return parse_dreamrc(text, path=path, source=source)


# --- resolution --------------------------------------------------------------


def find_dreamrc(start: Path | None = None) -> Path | None:
    """The nearest ``.dreamrc`` walking up from ``start`` (cwd by default)."""
    return dreamrc_above(start)


def local_dreamrc_path(
    explicit: str | Path | None = None, *, cwd: Path | None = None
) -> tuple[Path, str] | None:
    """The first local file in resolution order, with its source label."""
    if explicit:
        p = Path(explicit).expanduser()
        if not p.is_file():
            _refuse_not_regular(p, "--dreamrc names")
            raise DreamrcError("--dreamrc names a file that does not exist", path=p)
        return p, "--dreamrc"
    env = os.environ.get(ENV_PATH, "").strip()
    if env:
        p = Path(env).expanduser()
        if not p.is_file():
            _refuse_not_regular(p, f"${ENV_PATH} names")
            raise DreamrcError(f"${ENV_PATH} names a file that does not exist", path=p)
        return p, "$DREAMRC"
    found = find_dreamrc(cwd)
    here = (cwd or Path.cwd()).absolute()
    for d in (here, *here.parents):  # one nearer than the file found, not read: say so
        if found is not None and d == found.parent:
            break
        _refuse_not_regular(d / FILENAME, "is")
    if found is not None:
        return found, "cwd"
    home = Path(os.path.expanduser("~")) / FILENAME
    if home.is_file():
        return home, "home"
    _refuse_not_regular(home, "is")
    return None


def _refuse_not_regular(path: Path, how: str) -> None:
    """A DreamrcError saying what ``path`` is when it exists but is not a regular file
    (a FIFO, a link to /dev/zero): it was not read, and is not taken for absent."""
    from .filekind import not_regular

    what = not_regular(path)
    if what is not None:
        raise DreamrcError(
            f"{how} {what}, not a regular file: it was not read (a FIFO would block, "
            f"a device never ends); put the settings file itself there, or remove it",
            path=path,
        )


def cache_path(namespace: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME")
    if base:
        root = Path(base) / CACHE_APP
    else:
        from platformdirs import user_cache_dir

        root = Path(user_cache_dir(CACHE_APP))
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in namespace) or "default"
    return root / f"dreamrc-{safe}.json"


@dataclass(frozen=True)
class PullSettings:
    url: str
    namespace: str
    token: str | None


def pull_settings_from_env() -> PullSettings | None:
    """A pull needs ``LAKESHORE_URL`` or a token (``LAKESHORE_TOKEN`` / ``_FILE``)."""
    url = os.environ.get("LAKESHORE_URL", "").strip()
    token = os.environ.get("LAKESHORE_TOKEN", "").strip() or None
    token_file = os.environ.get("LAKESHORE_TOKEN_FILE", "").strip()
    if token is None and token_file:
        try:
            token = read_text(Path(token_file).expanduser(), limit=64 * 1024).strip() or None
        except (OSError, ValueError):
            token = None
    if not url and token is None:
        return None
    return PullSettings(
        url=url or "http://127.0.0.1:7878",
        namespace=os.environ.get("LAKESHORE_NAMESPACE", "").strip() or "default",
        token=token,
    )


def compose_from_server(
    providers: list[Mapping[str, Any]], modes: list[Mapping[str, Any]], *, source: str = "server"
) -> DreamRc:
    """The ``DreamRc`` a namespace's providers and modes endpoints describe."""
    specs: dict[str, ProviderSpec] = {}
    for row in providers:
        launcher = str(row["launcher"])
        specs[str(row["name"])] = ProviderSpec(
            name=str(row["name"]),
            launcher=launcher,
            kwargs=dict(row.get("kwargs") or {}),
            dispatch=str(row.get("dispatch") or DEFAULT_DISPATCH.get(launcher, "direct")),
        )
    mode_map: dict[str, dict[str, Any]] = {}
    for row in modes:
        body = {
            k: v for k, v in row.items() if k not in ("name", "namespace", "createdAt", "updatedAt")
        }
        mode_map[str(row["name"])] = body
    return DreamRc(source=source, providers=specs, modes=mode_map)


def _pull(settings: PullSettings, timeout: float) -> DreamRc | None:
    import http.client

    from .http_json import is_loopback, request_json

    headers = {"Accept": "application/json"}
    if settings.token:
        headers["Authorization"] = f"Bearer {settings.token}"
    base = f"{settings.url.rstrip('/')}/api/namespaces/{settings.namespace}"
    loopback = is_loopback(settings.url)
    try:
        p_code, prov_body = request_json(
            f"{base}/providers", headers, timeout=timeout, loopback=loopback
        )
        m_code, mode_body = request_json(
            f"{base}/modes", headers, timeout=timeout, loopback=loopback
        )
    except (OSError, ValueError, http.client.HTTPException):
        return None
    if p_code != 200 or m_code != 200:
        return None
    prov_rows = prov_body.get("providers", prov_body) if isinstance(prov_body, dict) else prov_body
    mode_rows = mode_body.get("modes", mode_body) if isinstance(mode_body, dict) else mode_body
    rc = compose_from_server(list(prov_rows), list(mode_rows))
    _write_cache(settings.namespace, rc)
    return rc


def _write_cache(namespace: str, rc: DreamRc) -> None:
    path = cache_path(namespace)
    payload = {
        "providers": [p.to_dict() for p in rc.providers.values()],
        "modes": [{"name": n, **body} for n, body in rc.modes.items()],
    }
    try:
        atomic_write(path, json.dumps(payload, indent=2, sort_keys=True), mode=0o600)
    except OSError:
        return  # a cache that cannot be written is only a missed optimisation


def _read_cache(namespace: str) -> DreamRc | None:
    path = cache_path(namespace)
    try:
        payload = read_json(path)
        rc = compose_from_server(
            payload.get("providers", []), payload.get("modes", []), source="cache"
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return DreamRc(
        source="cache", path=path, default=rc.default, modes=rc.modes, providers=rc.providers
    )


def load_dreamrc(
    explicit: str | Path | None = None,
    *,
    cwd: Path | None = None,
    pull: bool = True,
    pull_settings: PullSettings | None = None,
    timeout: float = 2.0,
) -> DreamRc:
    """Resolve and parse ``.dreamrc``, first hit wins (see the module docstring).

    ``pull=False`` skips the server pull (the cache of an earlier pull still counts).
    """
    local = local_dreamrc_path(explicit, cwd=cwd)
    if local is not None:
        return read_dreamrc(local[0], source=local[1])
    settings = pull_settings or pull_settings_from_env()
    if pull and settings is not None:
        pulled = _pull(settings, timeout)
        if pulled is not None:
            return pulled
    namespace = settings.namespace if settings else os.environ.get("LAKESHORE_NAMESPACE", "default")
    cached = _read_cache(namespace or "default")
    if cached is not None:
        return cached
    return DreamRc(source="empty")


def lakeshore_section(
    explicit: str | Path | None = None, *, cwd: Path | None = None
) -> dict[str, str]:
    """The ``lakeshore:`` mapping (url, namespace, token_file) of the local ``.dreamrc``,
    or ``{}``. Never pulls from the server (the section says where the server is)."""
    local = local_dreamrc_path(explicit, cwd=cwd)
    if local is None:
        return {}
    return dict(read_dreamrc(local[0], source=local[1]).lakeshore)


def resolve_provider(
    name: str,
    explicit: str | Path | None = None,
    *,
    cwd: Path | None = None,
    pull: bool = True,
) -> ProviderSpec | None:
    """A provider by name from ``.dreamrc``, resolved in the document's order (the
    server pull included; ``pull=False`` leaves it out). ``None`` when no resolved
    ``.dreamrc`` defines it."""
    return load_dreamrc(explicit, cwd=cwd, pull=pull).provider(name)
