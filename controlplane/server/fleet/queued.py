"""Which providers are known to have nothing queued, so an idle long-poll of a known
worker costs no thread and no database round trip.

Every submit fires ``work:<ns id>:<provider>`` (on every replica, through the
Notifier), which bumps that key's generation. A poll that found nothing queued for
the provider marks the generation it read under as empty; while no submit has
bumped it since, later polls skip the database and go straight to waiting on the
key's event, which the next submit sets. A lost LISTEN connection
(``forget:all``) forgets every mark. Used only on the event loop.

A submit wakes every poll held on its provider, but one item needs one claim. So
the polls of one provider look in the database one at a time (:meth:`turn`): the
first claims the item and, when nothing more is queued, marks the provider empty;
the others, in turn, find the mark and wait again without a look. Without turns,
ten polls held on a provider sent ten claims for one item to the database at once
through the thread pool, nine of them for nothing, each holding the interpreter
lock the event loop needs (tests/controlplane/test_queued.py counts the looks).
"""

from __future__ import annotations

import asyncio


class QueueHints:
    def __init__(self) -> None:
        self._gen: dict[str, int] = {}
        self._empty: dict[str, int] = {}
        self._turns: dict[str, asyncio.Lock] = {}
        self._turns_loop: asyncio.AbstractEventLoop | None = None

    def generation(self, key: str) -> int:
        return self._gen.get(key, 0)

    def on_key(self, key: str) -> None:
        """Notifier handler."""
        if key.startswith("work:"):
            self._gen[key] = self._gen.get(key, 0) + 1
            self._empty.pop(key, None)
        elif key == "forget:all":
            self._empty.clear()

    def generations(self) -> dict[str, int]:
        """Every key's generation now (a copy), to mark empty under later."""
        return dict(self._gen)

    def mark_empty(self, key: str, generation: int) -> None:
        if self._gen.get(key, 0) == generation:
            self._empty[key] = generation

    def known_empty(self, key: str) -> bool:
        mark = self._empty.get(key)
        return mark is not None and mark == self._gen.get(key, 0)

    def turn(self, key: str) -> asyncio.Lock:
        """The lock a poll holds while it looks for ``key``'s work in the database
        (``async with hints.turn(key):``, then :meth:`known_empty` again)."""
        loop = asyncio.get_running_loop()
        if loop is not self._turns_loop:  # a lock waited on is bound to its loop
            self._turns, self._turns_loop = {}, loop
        lock = self._turns.get(key)
        if lock is None:
            lock = self._turns[key] = asyncio.Lock()
        return lock
