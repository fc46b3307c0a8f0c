"""``plan``'s terraform run, started ahead of the rest of the run.

On an unchanged, initialised provider ``plan --json`` starts one terraform process,
``plan -json``, and what it needs does not change from one plan to the next: the
provider's terraform folder, the binary, its arguments and its environment. Each
plan leaves them in a record beside the saved plan (``terraform/tfplan.ahead.json``,
:func:`remember`), and the console script's short way starts terraform from that
record (:func:`start_plan`) before it imports the rest: ``os``, the interpreter's
JSON accelerator (``leanjson``) and ``posix_spawn`` (``started``) are all this module
needs to start it. Its paths are strings (``os.path``, ``pathnames``), not
``pathlib``'s: that import (``re``, ``enum``, ``functools``, ``urllib`` and more) would
come before terraform's start, about as much CPU as the rest of the way there. Python
imports, observes and scans while terraform runs on the other core; the backend's
plan takes the run over (:func:`take`) where the facts it computes itself are the
same (folder, binary, environment, what init reads, no progress wanted), and
otherwise stops it and runs its own.

A plan started ahead is safe to leave unused:

* it is started only where the record's binary is the same file chosen the same
  way (``TERRAFORM_BINARY``, ``PATH``), the provider's settings come from the same
  files and variables (so it talks to the endpoints and mirror the plan would),
  the state is a local file with no lock record and no errored state beside it,
  and no record of a verb of the engine (``intent.json``) lies beside the provider;
* it writes its plan to a file of its own (``terraform/early-<pid>.tfplan``: a
  plan file, git-ignored, which neither the decision scan, the init record nor the
  plan record reads), moved over ``tfplan`` only when taken: a run that ends
  before planning (blocked decisions, a verb in flight, an adopted host, a binary
  too old, an edit of what init reads, an error) leaves the saved plan it found;
* a plan only reads the state; the lock it holds while it runs belongs to this
  process's own child, which ``observe_state`` does not count (:func:`owns`);
* one not taken is interrupted as a person's Ctrl-C does (terraform stops and
  releases its lock itself), waited for, and its file removed (:func:`settle`),
  before any other terraform run of the backend's plan (``init`` included) and
  when the command ends.
"""

from __future__ import annotations

import os

from .pathnames import exists, expanduser, is_file, join, lexical, unlink, up

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from os import PathLike
    from pathlib import Path

    from ...backends.base import Progress
    from .initmark import InitCheck
    from .runner import Completed
    from .started import Started

    StrPath = str | PathLike[str]

EARLY_PREFIX = "early-"  # + the pid of the process that started it + ".tfplan"
AHEAD_FILE = "tfplan.ahead.json"
AHEAD_FORMAT = 1
ERRORED_STATE = "errored.tfstate"  # as statefile.ERRORED_STATE
INTENT_FILE = "intent.json"  # as world.intent.INTENT_FILE
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")  # as world.paths.NAME_RE
BINARY_VARS = ("TERRAFORM_BINARY", "PATH")  # what terraform_binary() chooses by


class _Ahead:
    """One plan started ahead: the facts it was started with."""

    __slots__ = ("binary", "env", "fingerprint", "out", "run", "tf")

    def __init__(
        self, tf: str, binary: str, env: dict[str, str], fingerprint: str, out: str, run: Started
    ) -> None:
        self.tf = tf
        self.binary = binary
        self.env = env
        self.fingerprint = fingerprint
        self.out = out
        self.run = run


_PENDING: dict[str, _Ahead] = {}


def _key(tf: StrPath) -> str:
    return os.path.realpath(tf)


def is_name(name: str) -> bool:
    """Whether ``name`` is a provider's name (``world.paths.NAME_RE``, at most 63)."""
    return bool(name) and len(name) <= 63 and name[0] != "-" and set(name) <= _NAME_CHARS


def project_root(dream_dir: str | None) -> str:
    """The project root as ``world.paths.find_root`` chooses it (``--dream-dir``, else
    the nearest ``.dreamrc`` above the working directory, else that directory), spelled
    as its ``Path``, without its imports; a test holds the two the same."""
    if dream_dir is not None:
        p = join(os.getcwd(), expanduser(lexical(dream_dir)))
        return os.path.dirname(p) if os.path.basename(p) == ".dream" else p
    here = lexical(os.getcwd())
    for d in up(here):
        if is_file(join(d, ".dreamrc")):
            return d
    return here


def _settings_var(key: str) -> bool:
    """The variables the provider's settings read besides its files (endpoints,
    plugin mirror and cache: ``settings.endpoints``); none holds a secret."""
    return key in _SETTINGS_VARS or key.startswith(("AWS_ENDPOINT_URL_", "DREAMLAKE_AWS_"))


_SETTINGS_VARS = frozenset(
    {
        "AWS_ENDPOINT_URL",
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
        "DREAMLAKE_TF_PLUGIN_MIRROR",
        "DREAMRC",
        "HOME",
        "TF_PLUGIN_CACHE_DIR",
    }
)


def provider_settings(pdir: StrPath) -> dict[str, object]:
    """What the environment terraform runs with is made from, besides the variables
    themselves: the settings variables and every file the settings may come from
    (the provider's record, each ``.dreamrc`` the search could find), by name, size,
    inode and modification time. Another value here means another environment, and
    nothing starts ahead of it. ``pdir`` is a ``Path`` or its string: the names are
    the same."""
    folder = lexical(os.fspath(pdir))
    files = [join(folder, "provider.json"), *(join(d, ".dreamrc") for d in up(folder))]
    named = os.environ.get("DREAMRC", "").strip()
    if named:
        files.append(lexical(expanduser(lexical(named))))
    home = os.environ.get("HOME") or os.path.expanduser("~")
    files.append(join(home, ".dreamrc"))
    stats: list[list[object]] = []
    for f in files:
        try:
            st = os.stat(f)
            stats.append([f, st.st_size, st.st_ino, st.st_mtime_ns])
        except OSError:
            stats.append([f])
    env = {k: v for k, v in sorted(os.environ.items()) if _settings_var(k)}
    return {"env": env, "files": stats}


def start_plan(name: str, dream_dir: str | None) -> bool:
    """Start ``plan -json`` for provider ``name`` from the record the last plan left,
    where that is safe (the module docstring); True when one was started. Never
    raises: where anything is not as expected, nothing is started and the run plans
    as it always did."""
    try:
        return _start(name, dream_dir)
    except Exception:  # a head start only: the run itself says what is wrong
        return False


def _start(name: str, dream_dir: str | None) -> bool:
    if not is_name(name):
        return False
    if os.environ.get("TF_DATA_DIR"):
        return False
    pdir = os.path.join(project_root(dream_dir), ".dream", "providers", name)
    tf = os.path.join(pdir, "terraform")
    if _key(tf) in _PENDING or exists(os.path.join(pdir, INTENT_FILE)):
        return False
    from .leanjson import loads

    try:
        with open(os.path.join(tf, AHEAD_FILE), "rb") as f:
            rec = loads(f.read(64 * 1024))
    except (OSError, ValueError):
        return False
    if not isinstance(rec, dict) or rec.get("format") != AHEAD_FORMAT or rec["tf"] != _key(tf):
        return False
    if {k: os.environ.get(k) for k in BINARY_VARS} != rec["wanted"]:
        return False
    binary = rec["binary"]
    st = os.stat(binary)
    if [st.st_size, st.st_mtime_ns] != rec["binaryFile"]:
        return False
    if not is_file(os.path.join(pdir, "provider.json")):
        return False
    if exists(os.path.join(tf, rec["lock"])) or exists(os.path.join(tf, ERRORED_STATE)):
        return False
    if provider_settings(pdir) != rec["settings"]:
        return False
    env = dict(os.environ)
    env.update(rec["env"])
    name_out = f"{EARLY_PREFIX}{os.getpid()}.tfplan"
    out = os.path.join(tf, name_out)
    unlink(out)
    from .started import start
    from .tfexec.plan import plan_args

    key, fingerprint = _key(tf), str(rec["fingerprint"])

    def held(run: Started) -> None:  # before a Ctrl-C can come: settle finds it
        _PENDING[key] = _Ahead(key, binary, env, fingerprint, out, run)

    start(plan_args(out=name_out), cwd=tf, binary=binary, env=env, then=held)
    return True


def remember(tf: Path, binary: str, env: Mapping[str, str], fingerprint: str) -> None:
    """After a plan: what the next plan starts ahead from (``tfplan.ahead.json``),
    written only when it changed; removed where nothing may start ahead (state kept
    elsewhere than a local file)."""
    import json

    from ...settings.fsutil import atomic_write
    from .location import state_location
    from .lockinfo import lock_info_path

    path = os.path.join(tf, AHEAD_FILE)
    where = state_location(tf)
    if where.remote:
        unlink(path)
        return
    st = os.stat(binary)
    rec = {
        "format": AHEAD_FORMAT,
        "tf": _key(tf),
        "binary": binary,
        "binaryFile": [st.st_size, st.st_mtime_ns],
        "wanted": {k: os.environ.get(k) for k in BINARY_VARS},
        "env": {k: v for k, v in env.items() if os.environ.get(k) != v},
        "fingerprint": fingerprint,
        "lock": os.path.relpath(lock_info_path(where.path), tf),
        "settings": provider_settings(tf.parent),
    }
    text = json.dumps(rec, indent=2, sort_keys=True) + "\n"
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except (OSError, UnicodeDecodeError):
        pass
    atomic_write(path, text, durable=False)


def owns(pid: int | None) -> bool:
    """Whether ``pid`` is a plan this process started ahead and still holds, or a
    process of its own (terraform before 1.2 runs its work in a child of itself, to
    report a crash)."""
    ours = {a.run.pid for a in _PENDING.values()}
    for _ in range(4):
        if pid is None or pid <= 1:
            return False
        if pid in ours:
            return True
        pid = _parent(pid)
    return False


def _parent(pid: int) -> int | None:
    """The parent of ``pid`` from ``/proc`` (None where there is none to read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def pending(tf: StrPath) -> bool:
    """Whether a plan started ahead in ``tf`` is not taken or settled yet."""
    return _key(tf) in _PENDING


def take(
    tf: Path, binary: str, env: Mapping[str, str], mark: InitCheck, progress: Progress | None
) -> Completed | None:
    """The finished run of the plan started ahead in ``tf`` when it was started with
    these facts, its plan moved over ``tfplan``; else None (one started with other
    facts is settled first, and the caller runs its own)."""
    from ...contract.events import active as events_active

    ahead = _PENDING.get(_key(tf))
    if ahead is None:
        return None
    same = (
        ahead.binary == binary
        and ahead.env == dict(env)
        and ahead.fingerprint == mark.fingerprint
        and not mark.needed
        and progress is None
        and not events_active()
    )
    if not same:
        _settle(ahead)
        return None
    done = ahead.run.finish()  # interrupted here, it stays pending: settle waits for it
    del _PENDING[ahead.tf]
    if done.returncode in (0, 2):
        from .planname import PLAN_FILE

        try:
            os.replace(ahead.out, os.path.join(tf, PLAN_FILE))
            return done
        except OSError:  # no file, or another filesystem: the caller plans again
            unlink(ahead.out)
            return None
    unlink(ahead.out)
    return done


def _settle(ahead: _Ahead, stop: bool = True) -> None:
    try:
        if stop:
            ahead.run.interrupt()
        else:
            ahead.run.finish()
    finally:
        _PENDING.pop(ahead.tf, None)
        unlink(ahead.out)


def settle(*, stop: bool = True) -> None:
    """Stop and remove every plan started ahead and not taken (the command ends).
    ``stop=False``: wait for it without a signal of our own (a Ctrl-C reached it
    already: a second one would make terraform exit at once)."""
    for ahead in list(_PENDING.values()):
        _settle(ahead, stop)


__all__ = [
    "AHEAD_FILE",
    "BINARY_VARS",
    "EARLY_PREFIX",
    "is_name",
    "owns",
    "pending",
    "project_root",
    "provider_settings",
    "remember",
    "settle",
    "start_plan",
    "take",
]
