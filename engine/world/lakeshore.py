"""The engine's view of the control plane: where it is, and who claims a provider.

Resolution, field by field, first hit wins:

* url: ``LAKESHORE_URL``; the ``lakeshore:`` section of the nearest ``.dreamrc``
  (``url``); the embedded default ``http://127.0.0.1:7878``.
* namespace: ``LAKESHORE_NAMESPACE``; ``.dreamrc`` ``namespace``; ``default``.
* ca (the CA certificate an ``https`` url is verified with; else the system's
  trust store): ``LAKESHORE_CA``; ``.dreamrc`` ``ca``.
* token: ``LAKESHORE_TOKEN``; the file named by ``LAKESHORE_TOKEN_FILE``; the
  ``.dreamrc`` ``token_file``; for a loopback url only, the admin token file that
  ``lakeshore serve`` writes under its data directory (``LAKESHORE_DATA_DIR`` or
  the user data directory).

Asking for claims is bounded by a short timeout; an unreachable, unconfigured or
refusing control plane returns ``None`` (the caller adds ``degraded:
["no-lakeshore"]``). Standard library only, so ``status`` stays fast.
"""

from __future__ import annotations

import os
import sys
import urllib.parse
from pathlib import Path

from ..contract.result import Claim, ClaimWorker
from ..settings.http_json import LOOPBACK_HOSTS as LOOPBACK_HOSTS
from ..settings.http_json import is_loopback
from ..settings.records import record
from .paths import nearest_dreamrc

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from typing import Any

EMBEDDED_URL = "http://127.0.0.1:7878"
DEFAULT_NAMESPACE = "default"
ADMIN_TOKEN_FILE = "admin.token"


@record()
class ControlPlane:
    """The control plane in force: its URL, namespace, token and where they came from."""

    url: str
    namespace: str = DEFAULT_NAMESPACE
    token: str | None = None
    source: str = "embedded default"
    ca: str | None = None  # a CA certificate file (see controlplane/tlsclient.py)


def default_data_dir() -> Path:
    """Where ``lakeshore serve`` keeps its SQLite file and admin token by default."""
    env = os.environ.get("LAKESHORE_DATA_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    if sys.platform.startswith("linux") and not os.environ.get("XDG_DATA_HOME", "").strip():
        # platformdirs' answer in the usual case, without importing it
        return Path(os.path.expanduser("~/.local/share")) / "lakeshore"
    import platformdirs

    return Path(platformdirs.user_data_dir("lakeshore"))


def _read_token(path: Path) -> str | None:
    from ..settings.readers import read_text

    try:
        text = read_text(path.expanduser(), limit=64 * 1024).strip()
    except (OSError, ValueError):  # missing, not UTF-8, too large, not a regular file
        return None
    return text or None


def _read_section(path: Path) -> dict[str, str]:
    """Just the ``lakeshore:`` mapping of one file, tags ignored; ``{}`` when it has
    none. A file that cannot be read as YAML at all (not UTF-8, too large, nested too
    deeply, an alias bomb, broken syntax) is a ``DreamrcError`` naming it: nobody can
    tell where the control plane is meant to be."""
    import yaml

    from ..settings.dreamrc import DreamrcError
    from ..settings.readers import FileProblem, read_text
    from ..settings.yamlload import problem, tolerant_loader

    try:
        data = yaml.load(read_text(path), Loader=tolerant_loader())
    except FileProblem as exc:
        raise DreamrcError(exc.reason, path=path) from None
    except OSError:
        return {}
    except yaml.YAMLError as exc:
        what, line = problem(exc)
        raise DreamrcError(f"not valid YAML: {what}", path=path, line=line) from None
    except RecursionError:
        raise DreamrcError("nested too deeply to read", path=path) from None
    section = data.get("lakeshore") if isinstance(data, dict) else None
    if not isinstance(section, dict):
        return {}
    out = {
        str(k): str(v)
        for k, v in section.items()
        if v is not None and not isinstance(v, dict | list)
    }
    for file_key in ("token_file", "ca"):
        if file_key in out:
            tf = Path(os.path.expanduser(out[file_key]))
            out[file_key] = str(tf if tf.is_absolute() else path.parent / tf)
    return out


def dreamrc_section(start: Path | None) -> tuple[dict[str, str], Path | None]:
    """The ``lakeshore:`` section of the nearest ``.dreamrc`` and that file's path.

    Reading it means importing the YAML parser and the ``.dreamrc`` model, which
    would cost ``status`` more than the rest of its run; so the section is
    remembered in the user cache (kind ``dreamrc``) under the file's size, inode and
    times, the home folder ``~`` expands to and the modules that read it. A file
    that does not read is an error every time, never remembered."""
    path = nearest_dreamrc(start)
    if path is None:
        return {}, None
    from ..settings import usercache

    stats = usercache.file_stats(path)
    if stats is None:
        return _section(path, start), path
    here = Path(__file__).resolve().parent
    engine = here.parent
    code = usercache.code_stats(
        *(
            engine / f
            for f in (
                "settings/dreamrc.py",
                "world/lakeshore.py",
                "world/paths.py",
                "settings/readers.py",
                "settings/yamlload.py",
            )
        )
    )
    fp = [stats, os.path.expanduser("~"), code]
    got = usercache.remembered(
        "dreamrc",
        f"{path.absolute()}\0{here}",
        fp,
        lambda: _section(path, start),
        keep=usercache.settled([stats]),
    )
    return dict(got), path


def _section(path: Path, start: Path | None) -> dict[str, str]:
    try:
        from ..settings import dreamrc

        return dict(dreamrc.lakeshore_section(path, cwd=start))
    except Exception:
        # A .dreamrc broken elsewhere (or an older reader) still says where lakeshore is.
        return _read_section(path)


def resolve_control_plane(start: object | None = None, *, strict: bool = True) -> ControlPlane:
    """Where the control plane is for a project rooted at ``start`` (a path).

    A ``.dreamrc`` that cannot be read raises its ``DreamrcError``; ``strict=False``
    (the error paths, which must still answer) reads past it as if it were absent."""
    start_path = Path(str(start)) if start is not None else None
    env = os.environ
    try:
        section, rc_path = dreamrc_section(start_path)
    except Exception:
        if strict:
            raise
        section, rc_path = {}, None
    rc_label = f".dreamrc ({rc_path})"

    url, source = EMBEDDED_URL, "embedded default"
    if env.get("LAKESHORE_URL", "").strip():
        url, source = env["LAKESHORE_URL"].strip(), "env"
    elif section.get("url"):
        url, source = section["url"], rc_label

    namespace = (
        env.get("LAKESHORE_NAMESPACE", "").strip() or section.get("namespace") or DEFAULT_NAMESPACE
    )

    token: str | None = None
    if env.get("LAKESHORE_TOKEN", "").strip():
        token = env["LAKESHORE_TOKEN"].strip()
    elif env.get("LAKESHORE_TOKEN_FILE", "").strip():
        token = _read_token(Path(env["LAKESHORE_TOKEN_FILE"].strip()))
    elif section.get("token_file"):
        token = _read_token(Path(section["token_file"]))
    elif is_loopback(url):
        token = _read_token(default_data_dir() / ADMIN_TOKEN_FILE)
    ca = env.get("LAKESHORE_CA", "").strip() or section.get("ca") or None
    return ControlPlane(url=url.rstrip("/"), namespace=namespace, token=token, source=source, ca=ca)


def _ask(
    cp: ControlPlane, method: str, path: str, body: object | None, timeout: float
) -> object | None:
    """One bounded JSON call; None on any failure (never raises, never hangs)."""
    if not cp.url or not cp.token:
        return None
    from ..settings.http_json import request_json

    headers = {"Accept": "application/json", "Authorization": f"Bearer {cp.token}"}
    try:
        code, data = request_json(
            cp.url.rstrip("/") + path,
            headers,
            method=method,
            body=body,
            timeout=timeout,
            loopback=is_loopback(cp.url),
            limit=64 * 1024 * 1024,
            ca=cp.ca,
        )
    except Exception as exc:
        _note_untrusted(cp.url, exc, cp.ca)
        return None
    _UNTRUSTED.pop(cp.url, None)
    return data if code == 200 else None


_UNTRUSTED: dict[str, str] = {}
"""The control planes this process could not verify over TLS, by URL: why."""


def _note_untrusted(url: str, exc: BaseException, ca: str | None) -> None:
    from ...controlplane.tlsclient import explain, plain_to_tls_hint

    trust = explain(exc, url, ca)
    why = trust.message if trust is not None else plain_to_tls_hint(exc, url)
    if why:
        _UNTRUSTED[url] = why


def untrusted(url: str) -> str | None:
    """Why the last request to ``url`` failed for a TLS reason (an unknown CA, a
    name the certificate does not cover, an ended certificate, plain HTTP to a TLS
    port), or None when it did not."""
    return _UNTRUSTED.get(url)


def unreachable(url: str) -> tuple[str, ...]:
    """What ``degraded`` says when the control plane at ``url`` did not answer:
    ``no-lakeshore``, and ``lakeshore-untrusted`` when that was for a TLS reason."""
    return ("no-lakeshore", "lakeshore-untrusted") if untrusted(url) else ("no-lakeshore",)


def _claim(data: object) -> Claim | None:
    try:
        assert isinstance(data, dict)
        raw = list(data.get("instances", []))
        workers = [
            ClaimWorker(
                instance_id=str(i["instanceId"]),
                host=i.get("host"),
                state=i.get("state") if i.get("state") in ("joining", "active") else None,
                last_seen=i.get("lastSeen"),
                queues=[str(q) for q in i.get("queues") or []],
            )
            for i in raw
        ]
        return Claim(
            live=int(data["live"]),
            gone=int(data["gone"]),
            instances=[w.instance_id for w in workers],
            workers=workers,
        )
    except Exception:
        return None


def fetch_claims(
    cp: ControlPlane, provider: str, *, identity: str | None = None, timeout: float = 1.0
) -> Claim | None:
    """``GET {url}/api/namespaces/{ns}/providers/{provider}/claims[?identity=]``; None
    when unreachable, unconfigured (no token) or refused — never raises, never hangs.
    With ``identity`` only the daemons started for that provider identity count."""
    path = "/api/namespaces/{}/providers/{}/claims".format(
        urllib.parse.quote(cp.namespace, safe=""), urllib.parse.quote(provider, safe="")
    )
    if identity:
        path += "?" + urllib.parse.urlencode({"identity": identity})
    return _claim(_ask(cp, "GET", path, None, timeout))


def fetch_claims_many(
    cp: ControlPlane, wanted: list[tuple[str, str | None]], *, timeout: float = 5.0
) -> list[Claim | None] | None:
    """The claims of many ``(provider, identity)`` pairs in ONE request
    (``POST .../claims/query``); None when the control plane cannot be asked."""
    if not wanted:
        return []
    path = "/api/namespaces/{}/claims/query".format(urllib.parse.quote(cp.namespace, safe=""))
    body = {"providers": [{"name": n, **({"identity": i} if i else {})} for n, i in wanted]}
    data = _ask(cp, "POST", path, body, timeout)
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        return None
    out = [_claim(c) for c in data["claims"]]
    return out if len(out) == len(wanted) else None


# -- daemon tokens: minted by connect, revoked by destroy and delete --------------


def mint_daemon_token(
    client: Any,
    namespace: str,
    provider: str,
    host: str,
    *,
    replaces: str = "",
    scope: str = "daemon",
) -> str:
    """A daemon token for ``provider`` on ``host`` (it works for that provider's
    worker routes only), or with ``scope="bootstrap"`` a one-use token the daemon
    spends on its client certificate (a control plane over https) where the server
    signs certificates, else (plain HTTP behind a TLS-terminating proxy) a daemon
    token: the server decides, in the same request (``orDaemon``). The control
    plane revokes, in the same commit, the provider's earlier daemon tokens and
    certificates for the host and ``replaces`` (the token the install held) unless
    that is an admin token. Raises the client's errors."""
    return str(
        client.create_token(
            namespace,
            label=f"nymph {provider} on {host}",
            scope=scope,
            provider=provider,
            host=host[:255],
            replaces=replaces or None,
            orDaemon=True if scope == "bootstrap" else None,
        )
    )


def revoke_daemon_tokens(cp: ControlPlane, provider: str, *, timeout: float = 5.0) -> str | None:
    """Revoke every daemon token of ``provider`` (``destroy`` and ``delete`` do: a
    removed install's token must not register a ghost worker). Returns a note, or
    None when nothing was revoked or the control plane could not be asked."""
    path = "/api/namespaces/{}/providers/{}/tokens".format(
        urllib.parse.quote(cp.namespace, safe=""), urllib.parse.quote(provider, safe="")
    )
    data = _ask(cp, "DELETE", path, None, timeout)
    revoked = data.get("revoked") if isinstance(data, dict) else None
    if not isinstance(revoked, list) or not revoked:
        return None
    n = len(revoked)
    return f"revoked {n} daemon token{'s' if n != 1 else ''} of '{provider}' on {cp.url}"
