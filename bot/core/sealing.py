"""Secrets kept at rest (a Zotero API key), sealed with a key derived from `SECRET_KEY`.

Fernet (AES-128-CBC with an HMAC-SHA256, from `cryptography`): a sealed value cannot be read
or altered without the operator's `SECRET_KEY`, which never enters the database. The Fernet
key is derived from it with HKDF-SHA256, so any long random string serves as `SECRET_KEY`.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

MIN_SECRET_KEY_LENGTH = 32  # characters; `secrets.token_urlsafe(32)` gives 43
_PURPOSE = b"arxiv-alert-bot sealed secrets v1"


class Unsealable(Exception):
    """A sealed value this `SECRET_KEY` did not seal (the key changed) or that was altered."""


class Sealer:
    """Seals and opens short secrets with the operator's `SECRET_KEY`."""

    def __init__(self, secret_key: str) -> None:
        derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
                       info=_PURPOSE).derive(secret_key.encode())
        self._fernet = Fernet(base64.urlsafe_b64encode(derived))

    def seal(self, secret: str) -> str:
        return self._fernet.encrypt(secret.encode()).decode("ascii")

    def open(self, sealed: str) -> str:
        try:
            return self._fernet.decrypt(sealed.encode("ascii")).decode()
        except (InvalidToken, ValueError):
            raise Unsealable("the sealed value does not open with this SECRET_KEY") from None
