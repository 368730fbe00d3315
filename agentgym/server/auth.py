"""The env server's one access rule: a shared bearer token, when the server has one.

HTTP requests send it as ``Authorization: Bearer <token>``; WebSocket clients that cannot set
headers (browsers) may send ``?token=<token>`` instead. The comparison takes the same time
whatever the guess, so the token cannot be read off response times.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping


def authorised(token: str | None, headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
    """Whether a request with ``headers`` and ``query`` may use a server guarded by ``token``.

    Examples:
        >>> authorised(None, {}, {})
        True
        >>> authorised("s3cret", {"authorization": "Bearer s3cret"}, {})
        True
        >>> authorised("s3cret", {}, {"token": "guess"})
        False
    """
    if not token:
        return True
    auth = headers.get("authorization", "")
    given = auth[7:] if auth.lower().startswith("bearer ") else query.get("token", "")
    return hmac.compare_digest(given.encode(), token.encode())
