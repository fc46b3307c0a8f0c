"""The exact command lines the engine hands to an agent in ``nextAction``."""

from __future__ import annotations

PROG = "dreamlake provider"


def _quote(word: str) -> str:
    """``shlex.quote``, imported only for a command line with a folder or host in it:
    most carry a provider's name alone, which never needs quoting."""
    import shlex

    return shlex.quote(word)


def _dd(dream_dir: str | None) -> str:
    return f" --dream-dir {_quote(dream_dir)}" if dream_dir else ""


def create_continue(name: str, dream_dir: str | None = None) -> str:
    return f"{PROG} create -n {name} --continue{_dd(dream_dir)}"


def plan(name: str, dream_dir: str | None = None) -> str:
    return f"{PROG} plan -n {name}{_dd(dream_dir)}"


def apply_yes(name: str, dream_dir: str | None = None) -> str:
    return f"{PROG} apply -n {name} --yes{_dd(dream_dir)}"


def connect(name: str, dream_dir: str | None = None, host: str | None = None) -> str:
    h = f" --host {_quote(host)}" if host else ""
    return f"{PROG} connect -n {name}{h}{_dd(dream_dir)}"


def status(name: str, dream_dir: str | None = None) -> str:
    return f"{PROG} status -n {name}{_dd(dream_dir)}"


def create(name: str, vendor: str, dream_dir: str | None = None, backend: str | None = None) -> str:
    b = f" --backend {backend}" if backend and backend != "terraform" else ""
    return f"{PROG} create -n {name} --provider {vendor}{b}{_dd(dream_dir)}"


def create_help(name: str | None = None, dream_dir: str | None = None) -> str:
    """Ask for the vendor, keeping the name: the help lists the vendors to choose from.
    ``None`` (a name that cannot go into a command line): the help alone."""
    n = f" -n {name}" if name else ""
    return f"{PROG} create{n} --help{_dd(dream_dir)}"


def suspend(name: str, dream_dir: str | None = None, yes: bool = False) -> str:
    return f"{PROG} suspend -n {name}{' --yes' if yes else ''}{_dd(dream_dir)}"


def resume(name: str, dream_dir: str | None = None, yes: bool = False) -> str:
    return f"{PROG} resume -n {name}{' --yes' if yes else ''}{_dd(dream_dir)}"


def reconcile(name: str, dream_dir: str | None = None, yes: bool = False) -> str:
    return f"{PROG} reconcile -n {name}{' --yes' if yes else ''}{_dd(dream_dir)}"


def pool_status(pool: str, dream_dir: str | None = None) -> str:
    return f"dreamlake pool status {_quote(pool)}{_dd(dream_dir)}"


def destroy_yes(name: str, dream_dir: str | None = None) -> str:
    return f"{PROG} destroy -n {name} --yes{_dd(dream_dir)}"


def delete_yes(name: str, dream_dir: str | None = None) -> str:
    return f"{PROG} delete -n {name} --yes{_dd(dream_dir)}"


def list_(dream_dir: str | None = None) -> str:
    return f"{PROG} list{_dd(dream_dir)}"


# ``commands.list``, the name the verbs share; defined last, under the builtin's name.
list = list_
