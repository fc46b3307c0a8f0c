"""Which providers are known to have nothing queued, so an idle long-poll of a known
worker costs no thread and no database round trip.

Every submit fires ``work:<ns id>:<provider>`` (on every replica, through the
Notifier), which bumps that key's generation. A poll that found nothing queued for
the provider marks the generation it read under as empty; while no submit has
bumped it since, later polls skip the database and go straight to waiting on the
key's event, which the next submit sets. A lost LISTEN connection
(``forget:all``) forgets every mark. Used only on the event loop.
"""

from __future__ import annotations


class QueueHints:
    def __init__(self) -> None:
        self._gen: dict[str, int] = {}
        self._empty: dict[str, int] = {}

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
