"""``apply --yes``'s terraform run, started ahead of the rest of the run.

An apply changes the world, so unlike the plan ``plan`` starts ahead (``early``)
it is never started to be stopped later: it starts here only where every check
the apply makes before terraform has been made, with the standard library alone
(``os``, the JSON accelerator through ``leanjson``, the engine's own SHA-256;
paths as ``os.path`` strings, ``pathnames``: a ``pathlib`` import, with ``re``,
``enum``, ``functools`` and more, would cost about as much CPU again before
terraform's start), and passed:

* the saved plan is fresh as ``planfile.freshness`` says it: ``tfplan`` is the
  file its record names, no input changed, the state is the one it was made
  against; and nothing in the provider's folder changed since it was made (its
  record, target and notes) nor the template's manifest, whose decisions are all
  read from ``terraform/`` (that plan ran only because none blocked, on inputs
  unchanged since);
* the provider is a ``terraform`` one, not adopted; no record of a verb lies
  beside it (``intent.json``); the state is the default local file, readable, with
  no lock record, no lock held on it and no errored state beside it;
* the binary is the one ``terraform_binary()`` would choose, the very file the
  last plan ran (``tfplan.ahead.json``, the record ``early`` reads), with the same
  environment; the provider's settings come from the same files and variables;
* no request to the control plane is needed first: no token in the environment,
  no ``.dreamrc`` that could name one, no admin token of a local server.

Where anything is not so, or cannot be read, nothing starts and the run applies
as it always did. Otherwise the record of the verb is written exactly as
``world.intent.recording`` writes it (so a crash leaves what it always left; made
durable right after terraform's exec rather than before it), the state's times are
taken, and ``terraform apply`` starts; the apply verb claims it (:func:`claim`)
before it looks at the world, and the backend's apply takes its result over
(:func:`take`) where it would have started its own. One not taken is waited for,
never stopped (:func:`settle`): where the verb answered before applying, its answer
says that the apply ran; where a Ctrl-C came before the verb claimed it, the
console script waits for it (:func:`settle_all`) and keeps the record, as for any
interrupted apply.
"""

from __future__ import annotations

import os

# ``from .x import`` names, not ``from . import x``: the latter asks the package's
# lazy ``__getattr__`` first, which imports ``importlib``.
from .early import (
    AHEAD_FILE,
    AHEAD_FORMAT,
    BINARY_VARS,
    ERRORED_STATE,
    INTENT_FILE,
    is_name,
    project_root,
    provider_settings,
)
from .early import pending as plan_pending
from .executable import RUN_VARS, chosen
from .flockbytes import type_and_pid, whole_file
from .pathnames import expanduser, join, lexical, unlink, up
from .planinputs import input_names
from .planname import META_FILE, PLAN_FILE

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from os import PathLike
    from pathlib import Path

    from ...backends.base import InfraState
    from .runner import Completed
    from .started import Started

    StrPath = str | PathLike[str]

STATE_FILE = "terraform.tfstate"  # as statefile.STATE_FILE, the default location
LOCK_INFO = ".terraform.tfstate.lock.info"  # lockinfo.lock_info_path of it
META_FORMAT = 1  # as planfile.META_FORMAT
MAX_STATE = 256 * 1024 * 1024  # as settings.readers.MAX_STATE
TEMPLATE_PATH_ENV = "DREAMLAKE_TEMPLATE_PATH"  # user templates: the full reader decides
_TOKEN_VARS = ("LAKESHORE_TOKEN", "LAKESHORE_TOKEN_FILE")


class Ahead:
    """One apply started ahead: what the backend's apply needs to take it over."""

    __slots__ = (
        "before",
        "binary",
        "claimed",
        "folder",
        "pdir",
        "read",
        "run",
        "state",
        "taken",
        "times",
        "total",
    )

    # The verb's own spelling of the provider's folder, its state and the state files'
    # times (its answer names the files written), set where the verb claims the run
    # (:func:`claim`) or takes it (:func:`take`).
    pdir: Path
    state: Path
    before: dict[Path, float | None]

    def __init__(
        self,
        folder: str,
        binary: str,
        times: dict[str, float | None],
        total: int | None,
        run: Started,
    ) -> None:
        self.folder = folder  # the provider's folder, as the start found it
        self.binary = binary
        self.times = times  # the state files' modification times before it started
        self.total = total
        self.run = run
        self.taken = False
        self.claimed = False
        self.read: tuple[bytes | None, float | None] = (None, None)  # the state it started on

    def spelled(self, provider_dir: Path) -> None:
        """Its paths as the verb spells ``provider_dir``."""
        tf = provider_dir / "terraform"
        self.pdir, self.state = provider_dir, tf / STATE_FILE
        self.before = {tf / os.path.basename(p): m for p, m in self.times.items()}


_PENDING: dict[str, Ahead] = {}
_Facts = tuple[str, str, dict[str, str], int, tuple[bytes | None, float | None]]


def start_apply(name: str, dream_dir: str | None) -> bool:
    """Start ``terraform apply tfplan`` for provider ``name`` where every check the
    apply makes first has passed (the module docstring); True when it started.
    Never raises: where anything is not as expected nothing starts."""
    try:
        facts = _checked(name, dream_dir)
    except Exception:  # a head start only: the run itself says what is wrong
        return False
    if facts is None:
        return False
    try:
        return _launch(*facts)
    except Exception:  # not started (its record removed): the run applies as always
        return False


def _checked(name: str, dream_dir: str | None) -> _Facts | None:
    if not is_name(name):
        return None
    if os.environ.get("TF_DATA_DIR") or os.environ.get(TEMPLATE_PATH_ENV):
        return None
    pdir = os.path.join(project_root(dream_dir), ".dream", "providers", name)
    tf = os.path.join(pdir, "terraform")
    key = os.path.realpath(pdir)
    if key in _PENDING or plan_pending(tf) or os.path.lexists(os.path.join(pdir, INTENT_FILE)):
        return None
    if not _no_token(pdir):
        return None
    from .leanjson import loads

    with open(os.path.join(tf, AHEAD_FILE), "rb") as f:
        rec = loads(f.read(64 * 1024))
    if not isinstance(rec, dict) or rec.get("format") != AHEAD_FORMAT:
        return None
    if rec["tf"] != os.path.realpath(tf) or rec["lock"] != LOCK_INFO:
        return None
    if {k: os.environ.get(k) for k in BINARY_VARS} != rec["wanted"]:
        return None
    binary = rec["binary"]
    if chosen() != binary:
        return None
    st = os.stat(binary)
    if [st.st_size, st.st_mtime_ns] != rec["binaryFile"]:
        return None
    if provider_settings(pdir) != rec["settings"]:
        return None
    env = _environment(tf, rec["env"])
    if env is None:
        return None
    with open(os.path.join(pdir, "provider.json"), "rb") as f:
        record = loads(f.read(1 << 20))
    if not isinstance(record, dict) or record.get("backend", "terraform") != "terraform":
        return None
    meta_path = os.path.join(tf, META_FILE)
    with open(meta_path, "rb") as f:
        meta = loads(f.read(1 << 24))
    made = os.stat(meta_path).st_mtime_ns
    if not _settled_since(pdir, made) or not _template_plain(record.get("vendor"), made):
        return None
    state = _state(tf)
    if state is None or not _unlocked(tf, state[0]) or not _fresh(tf, meta, state[0]):
        return None
    plan = meta["plan"]
    total = int(plan["add"]) + int(plan["change"]) + int(plan["destroy"])
    return pdir, binary, env, total, state


# What cliconfig.cli_env may set that the settings' own variables (compared through
# the ahead record) do not.
_CLI_VARS = ("TF_VAR_aws_endpoints", "TF_VAR_aws_skip_credentials_validation")


def _environment(tf: str, added: dict[str, str]) -> dict[str, str] | None:
    """The environment ``runner.run_env`` would give the apply: this process's, with
    what the last plan's runs added (the record keeps only what differed from that
    process's). None where a variable could differ from it: one the runs set that
    this environment holds and the record does not."""
    env = dict(os.environ)
    env.update(added)
    if any(env.get(k) != v for k, v in RUN_VARS.items()):
        return None
    if any(k in os.environ and k not in added for k in _CLI_VARS):
        return None
    config = os.path.join(tf, ".terraform", "dreamlake.tfrc")  # cliconfig.config_path: runs set it
    mine = os.environ.get("TF_CLI_CONFIG_FILE")
    if mine is not None and "TF_CLI_CONFIG_FILE" not in added and os.path.lexists(config):
        return None if mine != config else env
    return env


def _no_token(pdir: str) -> bool:
    """Whether ``lakeshore.resolve_control_plane`` surely finds no token (so the
    apply's row check asks nothing): none in the environment, no ``.dreamrc`` it
    could read one from, no admin token of a local server."""
    if any(os.environ.get(k, "").strip() for k in _TOKEN_VARS):
        return False
    named = os.environ.get("DREAMRC", "").strip()
    rcs = [join(d, ".dreamrc") for d in up(pdir)]
    rcs.append(join(os.environ.get("HOME") or os.path.expanduser("~"), ".dreamrc"))
    if named or any(os.path.lexists(p) for p in rcs):
        return False
    data = os.environ.get("LAKESHORE_DATA_DIR", "").strip()
    if data:
        folder = expanduser(lexical(data))
    elif os.environ.get("XDG_DATA_HOME", "").strip():
        return False
    else:
        folder = join(os.path.expanduser("~/.local/share"), "lakeshore")
    return not os.path.lexists(join(folder, "admin.token"))


def _settled_since(pdir: str, made: int) -> bool:
    """Nothing beside the provider's terraform folder (its record, target, notes)
    was written after the plan's record: the apply reads what the plan read."""
    with os.scandir(pdir) as entries:
        for e in entries:
            if e.name == "terraform":
                continue
            st = e.stat(follow_symlinks=False)
            if max(st.st_mtime_ns, st.st_ctime_ns) >= made:
                return False
    return True


def _template_plain(vendor: object, made: int) -> bool:
    """The shipped template's manifest, unchanged since the plan, reads every
    decision from ``terraform/`` (whose inputs the plan record holds)."""
    if not isinstance(vendor, str) or not vendor.replace("-", "").replace("_", "").isalnum():
        return False
    from .leanjson import loads

    package = os.path.realpath(__file__)  # Path(__file__).resolve().parents[3]
    for _ in range(4):
        package = os.path.dirname(package)
    manifest = os.path.join(package, "templates", vendor, "TEMPLATE.json")
    st = os.stat(manifest)
    if max(st.st_mtime_ns, st.st_ctime_ns) >= made:
        return False
    with open(manifest, "rb") as f:
        data = loads(f.read(1 << 20))
    if data.get("vendor") != vendor:
        return False
    files = [str(d.get("file", "")) for d in data.get("decisions") or []]
    return all(f.startswith("terraform/") and ".." not in f for f in files)


def _state(tf: str) -> tuple[bytes | None, float | None] | None:
    """The local state's bytes and modification time (None, None: no state), None
    where the file cannot be read as ``statefile.read_state`` reads it."""
    path = os.path.join(tf, STATE_FILE)
    raw = _read(path)
    if raw is None:
        return None, None
    return raw, os.stat(path).st_mtime


def _unlocked(tf: str, raw: bytes | None) -> bool:
    """The default local state: no other workspace or backend, readable, no lock
    record, no lock held on it, no errored state."""
    try:
        with open(os.path.join(tf, ".terraform", "environment"), "rb") as f:
            if f.read(4096).strip() not in (b"", b"default"):
                return False
    except FileNotFoundError:
        pass
    from .leanjson import loads

    try:
        with open(os.path.join(tf, ".terraform", "terraform.tfstate"), "rb") as f:
            backend = loads(f.read(1 << 20)).get("backend")
    except FileNotFoundError:
        backend = None
    if backend is not None and (
        backend.get("type") != "local" or any((backend.get("config") or {}).values())
    ):
        return False
    if os.path.lexists(os.path.join(tf, LOCK_INFO)):
        return False
    if os.path.lexists(os.path.join(tf, ERRORED_STATE)):
        return False
    state = os.path.join(tf, STATE_FILE)
    if raw is not None:
        if not raw.strip():
            return False  # a 0-byte state: the full reader decides
        data = loads(raw)
        if not isinstance(data, dict) or not isinstance(data.get("version", 4), int):
            return False
    return not _held(state)


def _held(state: str) -> bool:
    """Whether a lock on the state is held (as ``lockinfo.probe_fcntl``); True where
    that cannot be asked."""
    import fcntl

    try:
        fd = os.open(state, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    try:
        res = fcntl.fcntl(fd, fcntl.F_GETLK, whole_file(fcntl.F_WRLCK))
        return type_and_pid(res)[0] != fcntl.F_UNLCK
    except OSError:
        return True
    finally:
        os.close(fd)


def _read(path: StrPath) -> bytes | None:
    """A regular file's bytes (None when absent); raises for anything else."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_STATE:
            raise ValueError(f"{path} is not a file to read")
        return f.read()


def _sha256(data: bytes) -> str:
    from ...settings.digest import sha256

    return sha256(data).hexdigest()


def _fresh(tf: str, meta: dict[str, object], raw: bytes | None) -> bool:
    """``planfile.freshness``: the recorded plan file, the same inputs, the same state."""
    if meta.get("format") != META_FORMAT or meta.get("planFile") != PLAN_FILE:
        return False
    plan = _read(os.path.join(tf, PLAN_FILE))
    if plan is None or _sha256(plan) != meta["planSha256"]:
        return False
    inputs: dict[str, str] = {}
    for name in input_names(tf):
        data = _read(os.path.join(tf, name))
        if data is None:
            return False
        inputs[name] = _sha256(data)
    if inputs != meta["inputs"]:
        return False
    now = "absent" if raw is None or not raw.strip() else "sha256:" + _sha256(raw)
    state = meta["state"]
    return isinstance(state, dict) and now == state.get("fingerprint")


def _intent_text() -> str:
    """``intent.json`` as ``world.intent.write_intent`` writes an apply's record."""
    import time

    from .leanjson import dumps_flat

    t = time.time()
    pid = os.getpid()
    data = {
        "format": 1,
        "verb": "apply",
        "pid": pid,
        "procStart": _proc_start(pid),
        "host": os.uname().nodename,
        "started": t,
        "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t)),
        "yes": True,
        "step": "provision",
    }
    return dumps_flat(data) + "\n"


def _proc_start(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    tail = raw.rsplit(b")", 1)[-1].split()
    return tail[19].decode() if len(tail) > 19 else None


def _launch(
    pdir: str,
    binary: str,
    env: dict[str, str],
    total: int,
    state_read: tuple[bytes | None, float | None],
) -> bool:
    from ...settings.fsutil import atomic_write

    tf = os.path.join(pdir, "terraform")
    intent = os.path.join(pdir, INTENT_FILE)
    state = os.path.join(tf, STATE_FILE)
    times = {p: _mtime(p) for p in (state, f"{state}.backup")}
    # The record is in place (renamed over, whole) before terraform starts; it is made
    # durable (fsync) right after, beside terraform's start instead of before it: an
    # fsync commits the journal, with whatever the plan just wrote (2-25 ms here, at
    # times far more), while terraform takes longer than that to change anything.
    # The fsync waits in a thread of its own, not in the run's way.
    key = os.path.realpath(pdir)

    def held(run: Started) -> None:  # before a Ctrl-C can come: settle finds it
        ahead = Ahead(pdir, binary, times, total, run)
        ahead.read = state_read
        _PENDING[key] = ahead

    try:
        try:
            atomic_write(intent, _intent_text(), durable=False)
        except OSError:
            return False
        from .started import start
        from .tfexec.apply import apply_args

        start(apply_args(), cwd=tf, binary=binary, env=env, then=held)
    except BaseException:  # a Ctrl-C included: the record stays only with a run
        if key not in _PENDING:
            unlink(intent)  # nothing started: no verb to record
        raise
    _sync_behind(intent)
    return True


def _sync_behind(path: str) -> None:
    """:func:`_sync` in a thread of its own: it waits on the disk (2-25 ms here), not
    on the CPU, while the run goes on beside terraform; the interpreter joins it
    before the process ends."""
    import threading  # the engine imports it later in the run all the same

    threading.Thread(target=_sync, args=(path,), name="intent-fsync").start()


def _sync(path: str) -> None:
    """``fsync`` of a file written without it (as ``atomic_write`` makes one durable)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _mtime(p: str) -> float | None:
    try:
        return os.stat(p).st_mtime_ns
    except OSError:
        return None


def claim(provider_dir: Path) -> bool:
    """Before the apply verb looks at the world: whether an apply was started ahead
    for ``provider_dir``; its record is then held as this process's own verb's
    (``intent.hold_ahead``), so the verb reads no other run in flight and its
    ``recording`` takes the record over."""
    ahead = _PENDING.get(os.path.realpath(provider_dir))
    if ahead is None:
        return False
    from ...world.intent import hold_ahead

    ahead.spelled(provider_dir)  # the verb's spelling of the folder, in its answer
    hold_ahead(provider_dir, "apply", yes=True, step="provision")
    ahead.claimed = True
    return True


def pending(tf: StrPath) -> Ahead | None:
    """The apply started ahead in ``tf`` and not taken yet."""
    ahead = _PENDING.get(os.path.realpath(os.path.dirname(os.fspath(tf))))
    return ahead if ahead is not None and not ahead.taken else None


def take(tf: Path) -> tuple[Ahead, Completed] | None:
    """The apply started ahead in ``tf``, finished (the backend's apply, where it would
    start its own); None when there is none. Interrupted while waiting, it stays
    pending: :func:`settle` waits for it."""
    ahead = pending(tf)
    if ahead is None:
        return None
    if not ahead.claimed:
        ahead.spelled(tf.parent)
    done = ahead.run.finish()
    ahead.taken = True
    return ahead, done


def state_before(provider_dir: Path) -> InfraState:
    """What ``observe_state`` said of the state the apply started ahead on, as far as
    a failed apply's answer reads it (its resources, outputs and note): that answer
    describes the world as the apply found it."""
    from ...backends.base import InfraState
    from .state import stale_hint
    from .statefile import StateFile, parse_state

    ahead = _PENDING[os.path.realpath(provider_dir)]
    raw, mtime = ahead.read
    if raw is None:
        state = StateFile(exists=False)
    else:
        import json

        state = parse_state(json.loads(raw), mtime=mtime)
    return InfraState(
        present=state.present,
        resources=state.resources,
        outputs=dict(state.outputs),
        plan_fresh=True,
        stale_hint=stale_hint(state),
    )


def settle(provider_dir: StrPath, *, interrupted: bool = False) -> Completed | None:
    """After the apply verb: an apply started ahead and not taken (the verb answered
    before applying) is waited for, never stopped; its record is removed as a
    finished verb's, or kept after an interruption or a signal, as ``recording``
    does. Returns that run where the verb did not take it (its answer says it ran)."""
    ahead = _PENDING.pop(os.path.realpath(provider_dir), None)
    if ahead is None:
        return None
    done = None if ahead.taken else ahead.run.finish()
    keep = interrupted or (done is not None and done.returncode < 0)
    if ahead.claimed:
        from ...world.intent import release_ahead

        release_ahead(ahead.pdir, keep=keep)  # nothing where the verb's recording took it
    elif not keep:
        unlink(os.path.join(ahead.folder, INTENT_FILE))
    return done


def settle_all(*, interrupted: bool = False) -> None:
    """:func:`settle` every apply started ahead that no verb settled (the command
    ends: a Ctrl-C came before the verb claimed it, or the verb never ran)."""
    for key in list(_PENDING):
        settle(key, interrupted=interrupted)


__all__ = [
    "Ahead",
    "claim",
    "pending",
    "settle",
    "settle_all",
    "start_apply",
    "state_before",
    "take",
]
