"""The token a daemon's credential comes from: a certificate's row names the token
it was first asked for with (``root_token_id``: a bootstrap token, an instance's or
a daemon's token), its renewals too. A worker registered by a certificate records
that token, so a launched instance's worker is tied to the instance's token
(``launch/tracking.py``) whichever certificate it presents."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from ...models import Token


def root_token_id(session: Session, token_id: int) -> int:
    """The id of the token ``token_id``'s credential comes from (itself for a token)."""
    root = session.scalar(select(Token.root_token_id).where(Token.id == token_id))
    return int(root) if root is not None else token_id
