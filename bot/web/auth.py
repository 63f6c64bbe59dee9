"""Telegram's signature on a Mini App's `initData`: who is asking, checked before anything else.

Telegram hands the page a query string (`Telegram.WebApp.initData`) and signs it with the bot's
token as its Mini App documentation describes: the secret key is HMAC-SHA-256 of the token with
the key "WebAppData", and `hash` is the hex HMAC-SHA-256, under that key, of every other field
as `key=value` lines sorted by key. Only the signed fields are believed: the user, the start
parameter (which names a group) and `auth_date`, which must be at most a day old.

Written here rather than taken from a package: it is twenty lines of the standard library, and
the packages that offer it either pull in a web framework or parse the user loosely.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import parse_qsl, urlencode

from bot.core.constants import DAY

MAX_AGE = DAY  # an initData older than this is refused (Telegram's own advice is "recent")
CLOCK_SKEW = 300.0  # seconds an auth_date may lie in the future (clocks differ a little)
MAX_INIT_DATA_BYTES = 8192  # Telegram's is well under 1 kB with a photo URL


class Rejection(StrEnum):
    """Why an initData was refused; the log line names this, never the data."""

    MISSING = "no initData"
    MALFORMED = "malformed initData"
    FORGED = "initData with a wrong signature"
    EXPIRED = "expired initData"
    NO_USER = "initData without a user"


class InitDataRefused(Exception):
    def __init__(self, reason: Rejection) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class WebUser:
    """The Telegram user Telegram signed for."""

    id: int
    first_name: str
    language_code: str | None = None


@dataclass(frozen=True, slots=True)
class InitData:
    """The signed fields the bot uses."""

    user: WebUser
    auth_date: float
    start_param: str | None = None


def _secret_key(token: str) -> bytes:
    return hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()


def _signature(fields: Mapping[str, str], token: str) -> str:
    check = "\n".join(f"{key}={fields[key]}" for key in sorted(fields))
    return hmac.new(_secret_key(token), check.encode(), hashlib.sha256).hexdigest()


def sign(fields: Mapping[str, str], token: str) -> str:
    """An initData query string of `fields`, signed as Telegram signs it (tests and benches
    open the Mini App with it)."""
    return urlencode({**fields, "hash": _signature(fields, token)})


def verify(raw: str | None, token: str, now: float, *, max_age: float = MAX_AGE) -> InitData:
    """The signed fields of `raw`; raises InitDataRefused when it is missing, malformed, not
    signed with `token`, older than `max_age` or without a user."""
    if not raw:
        raise InitDataRefused(Rejection.MISSING)
    if len(raw) > MAX_INIT_DATA_BYTES:
        raise InitDataRefused(Rejection.MALFORMED)
    try:
        pairs = parse_qsl(raw, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise InitDataRefused(Rejection.MALFORMED) from None
    fields = dict(pairs)
    if len(fields) != len(pairs):  # a field given twice: which one would be believed?
        raise InitDataRefused(Rejection.MALFORMED)
    given = fields.pop("hash", "")
    if not hmac.compare_digest(given.encode(), _signature(fields, token).encode()):
        raise InitDataRefused(Rejection.FORGED)
    try:
        auth_date = float(int(fields.get("auth_date", "")))
    except ValueError:
        raise InitDataRefused(Rejection.MALFORMED) from None
    if not now - max_age <= auth_date <= now + CLOCK_SKEW:
        raise InitDataRefused(Rejection.EXPIRED)
    return InitData(_user(fields.get("user")), auth_date, fields.get("start_param") or None)


def _user(raw: str | None) -> WebUser:
    try:
        user = json.loads(raw) if raw else None
    except ValueError:
        raise InitDataRefused(Rejection.MALFORMED) from None
    if not isinstance(user, dict) or type(user.get("id")) is not int or user.get("is_bot"):
        raise InitDataRefused(Rejection.NO_USER)
    language = user.get("language_code")
    return WebUser(user["id"], str(user.get("first_name") or ""),
                   language if isinstance(language, str) else None)
