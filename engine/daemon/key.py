"""What names a provider's daemon on its host: the provider's identity, not its name.

Two roots (two projects, two teams on one bastion) may each have a provider called
``lab``; their daemons must not share an install folder, a tmux session or a
systemd unit. So all three are keyed by the provider's identity (``prv-…``, the
``id`` in provider.json)::

    ~/.dreamlake/nymph/<key>/     the install folder
    nymph-<key>                   the tmux session
    nymph-<key>.service           the systemd unit

The provider's name stays in the prose and in the daemon's config.

Earlier installs were keyed by the name. Such an install is this provider's only
when its ``nymph.json`` names this identity (another root's ``lab`` names its
own): then every verb finds it under the old key (:func:`pick_script`) until the
next ``connect`` moves it under the new one.
"""

from __future__ import annotations

import shlex

from ..settings.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (see cli/entry.py)
if TYPE_CHECKING:
    from ..world.derive import Observation

_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
NYMPH_HOME = "$HOME/.dreamlake/nymph"


def key_of(identity: str) -> str:
    """The key for ``identity``: itself when it is a plain word (``prv-…`` /
    ``dir-…`` always are), else a digest of it (a hand-edited id stays usable)."""
    if 0 < len(identity) <= 64 and identity[0].isalnum() and set(identity) <= _WORD:
        return identity
    import hashlib

    return "prv-" + hashlib.sha256(identity.encode()).hexdigest()[:32]


@record()
class DaemonKey:
    """One provider's daemon: ``key`` names it on the host, ``name`` in prose, and
    ``identity`` tells its name-keyed install (``legacy``) from another root's."""

    name: str
    identity: str

    @property
    def key(self) -> str:
        return key_of(self.identity)

    @property
    def legacy(self) -> str:
        """The key installs before identity keys used: the provider's name."""
        return self.name

    @property
    def session(self) -> str:
        return f"nymph-{self.key}"

    @property
    def unit(self) -> str:
        return f"nymph-{self.key}.service"

    def marker(self) -> str:
        """The line the daemon's ``nymph.json`` holds when it is this provider's."""
        import json

        return f'"identity": {json.dumps(self.identity)}'

    def pick_script(self) -> str:
        """Shell lines setting ``k`` to the key the host's install is under: the
        identity key, else the name key when that install names this identity."""
        new = f'"{NYMPH_HOME}/{self.key}"'
        old = f'"{NYMPH_HOME}/{self.legacy}"'
        k, legacy = shlex.quote(self.key), shlex.quote(self.legacy)
        if self.key == self.legacy:
            return f"k={k}\n"
        return (
            f"k={k}\n"
            f"if [ ! -e {new}/nymph.json ] && [ -f {old}/nymph.json ] && "
            f"grep -qF {shlex.quote(self.marker())} {old}/nymph.json 2>/dev/null; then k={legacy}; fi\n"
        )


def of(obs: Observation) -> DaemonKey:
    """The daemon key of an observed provider (its record's identity)."""
    assert obs.record is not None
    return DaemonKey(obs.name, obs.record.identity(obs.dir))


__all__ = ["NYMPH_HOME", "DaemonKey", "key_of", "of"]
