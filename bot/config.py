"""Settings from the environment and `.env`; a bad value stops start-up with one clear line."""

from __future__ import annotations

import logging
import os
import re
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from dotenv import dotenv_values

from bot.core.constants import DAY
from bot.core.redaction import RedactingFilter, token_secrets
from bot.core.sealing import MIN_SECRET_KEY_LENGTH

_TOKEN_RE = re.compile(r"^\d+:[A-Za-z0-9_-]+$")
_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")  # what Telegram accepts as secret_token
_CATEGORY_RE = re.compile(r"^[a-z][a-z\-]*(\.[A-Za-z\-]+)?$")


# Polling by arXiv's calendar (bot/arxiv/freshness.py), each bounded by a day.
_CALENDAR_SECONDS = ("arxiv_tight_poll_seconds", "arxiv_relaxed_poll_seconds",
                     "arxiv_tight_window_seconds", "arxiv_stale_after_seconds")
_SECRET: dict[str, Any] = {"secret": True}  # shown as *** and redacted from every log line


class ConfigError(Exception):
    """A missing or malformed setting; its message is the one line shown to the operator."""


HEALTH_MIN_ARXIV_AGE = 3600  # health never calls arXiv polls stale sooner than this
# A digest's first delivery shows at most 100 entries, at most 40 a message: more messages
# than this could never be filled.
MAX_DIGEST_MESSAGES = 10


@dataclass(frozen=True, repr=False)
class Settings:
    """Everything the bot reads from its environment: each field from the variable of the same
    name in capitals, its default written here once."""

    telegram_bot_token: str = field(metadata=_SECRET)
    telegram_api_url: str = "https://api.telegram.org"
    arxiv_rss_url: str = "https://rss.arxiv.org/rss"
    arxiv_api_url: str = "https://export.arxiv.org/api/query"
    arxiv_archives: tuple[str, ...] = ("cs",)
    database_path: Path = Path("data/bot.sqlite3")
    # A PostgreSQL server's URL; None: SQLite, in the file at database_path. `database` is the
    # URL storage opens; its password is a secret (`secrets`, `__repr__`).
    database_url: str | None = None
    poll_interval_seconds: int = 3600
    admin_chat_ids: frozenset[int] = frozenset()
    log_level: str = "INFO"
    contact: str = ""
    arxiv_min_interval_seconds: float = 3.0
    admin_user_ids: frozenset[int] = frozenset()
    webhook_url: str | None = None  # set: Telegram pushes updates there instead of long polling
    webhook_listen: str = "127.0.0.1"
    webhook_port: int = 8443
    webhook_secret: str | None = field(default=None, metadata=_SECRET)
    # `health` reports stale beyond these ages (see bot/services/health.py).
    # Unset: three polls missed in a row, at least an hour (3 x POLL_INTERVAL_SECONDS' default).
    health_max_arxiv_age_seconds: int = 3 * 3600
    health_max_telegram_age_seconds: int = 600
    send_window: int | None = None  # None: derived from the pace and a p99 round trip
    paid_broadcast_stars_per_day: int = 0  # 0: paid broadcasts off
    # Messages a digest's first delivery may take: its most relevant entries that fit, the rest
    # behind its "Show more" button. At 1 the evening's digests are one message a chat.
    digest_messages: int = 1
    arxiv_listing_url: str = "https://arxiv.org/list"
    # Polling by arXiv's calendar (bot/arxiv/freshness.py); POLL_INTERVAL_SECONDS stays the ceiling.
    arxiv_tight_poll_seconds: int = 60
    arxiv_relaxed_poll_seconds: int = 3600
    arxiv_tight_window_seconds: int = 7200
    arxiv_stale_after_seconds: int = 1800
    # AI reading guides: off while llm_api_url is empty.
    llm_api_url: str = ""
    llm_api_key: str = field(default="", metadata=_SECRET)
    llm_model: str = ""
    llm_timeout_seconds: float = 30.0
    guide_chat_daily_limit: int = 20
    guide_daily_limit: int = 500
    # Hugging Face daily papers: off while hf_papers_url is empty.
    hf_papers_url: str = "https://huggingface.co/api/daily_papers"
    hf_poll_interval_seconds: int = 21600
    # The Mini App (bot/web/): off while webapp_url is empty, and its buttons hidden.
    webapp_url: str = ""
    webapp_listen: str = "127.0.0.1"
    webapp_port: int = 8444
    # Several bots on one PostgreSQL database: `health` reports the role of this instance's
    # process ("": this machine's hostname); a leader that could not renew its lease for
    # leader_lease_seconds stops sending, and a standby takes over after it.
    instance_name: str = ""
    leader_lease_seconds: int = 10
    # Seals secrets kept in the database (chats' Zotero API keys); empty: /zotero is off.
    secret_key: str = field(default="", metadata=_SECRET)
    zotero_api_url: str = "https://api.zotero.org"

    def is_operator(self, user_id: int | None, chat_id: int) -> bool:
        """Whether this user may use operator commands (/status) in this chat.

        Operators are the users in ADMIN_USER_IDS, plus the private chats listed in
        ADMIN_CHAT_IDS (a private chat's id is its user's id, so older settings keep working).
        They may use them in their private chat with the bot and in the ADMIN_CHAT_IDS chats;
        other members of an admin group may not.
        """
        operators = self.admin_user_ids | {i for i in self.admin_chat_ids if i > 0}
        if user_id is None or user_id not in operators:
            return False
        return chat_id == user_id or chat_id in self.admin_chat_ids

    @property
    def guides_enabled(self) -> bool:
        return bool(self.llm_api_url)

    @property
    def instance(self) -> str:
        """This bot's name among several on one database (`INSTANCE_NAME`, else the host's)."""
        return self.instance_name or socket.gethostname()

    @property
    def database(self) -> str:
        """The database's URL: `postgresql://…`, or `sqlite:///` and the file's path."""
        return self.database_url or f"sqlite:///{self.database_path}"

    def secrets(self) -> list[str]:
        """What no log line or output may show: every secret setting that is set, the bot
        token in both its forms, the database's password as written and decoded."""
        values = [getattr(self, f.name) for f in fields(self)
                  if f.metadata.get("secret") and f.name != "telegram_bot_token"]
        return [*token_secrets(self.telegram_bot_token), *[v for v in values if v],
                *database_secrets(self.database_url)]

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("secret") and value:
                text = "'***'"
            elif isinstance(value, frozenset):
                text = repr(sorted(value))
            elif isinstance(value, Path):
                text = repr(str(value))
            elif f.name == "database_url" and value:
                text = repr(hide_password(value))
            else:
                text = repr(value)
            shown.append(f"{f.name}={text}")
        return f"Settings({', '.join(shown)})"


_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(Settings)}


def _url(name: str, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{name} must be an http(s) URL, got {value!r}")
    return value.rstrip("/")


def _int(name: str, value: str, minimum: int, maximum: int) -> int:
    try:
        number = int(value.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {value!r}") from None
    if not minimum <= number <= maximum:
        raise ConfigError(f"{name} must be between {minimum} and {maximum}, got {number}")
    return number


def _float(name: str, value: str, minimum: float) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {value!r}") from None
    if not number >= minimum:
        raise ConfigError(f"{name} must be at least {minimum}, got {value!r}")
    return number


def _ids(name: str, value: str) -> frozenset[int]:
    ids = set()
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            ids.add(int(item))
        except ValueError:
            raise ConfigError(f"{name} must be comma-separated numeric ids, got {item!r}") from None
    return frozenset(ids)


class _Reader:
    """Reads each setting from the variable named as its field in capitals; unset or blank, it
    is the field's default."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = values

    def present(self, field_name: str) -> bool:
        """Whether the variable is set at all, if only to a blank."""
        return field_name.upper() in self._values

    def raw(self, field_name: str) -> str | None:
        value = self._values.get(field_name.upper())
        return None if value is None or not value.strip() else value.strip()

    def parsed(self, field_name: str, parse: Callable[[str, str], Any]) -> Any:
        """`parse(NAME, value)` of the variable, or the default when it is unset."""
        value = self.raw(field_name)
        return _DEFAULTS[field_name] if value is None else parse(field_name.upper(), value)

    def text(self, field_name: str) -> str:
        return self.parsed(field_name, lambda _, value: value)

    def url(self, field_name: str) -> str:
        return self.parsed(field_name, _url)

    def integer(self, field_name: str, minimum: int, maximum: int) -> int:
        return self.parsed(field_name, lambda name, value: _int(name, value, minimum, maximum))

    def number(self, field_name: str, minimum: float) -> float:
        return self.parsed(field_name, lambda name, value: _float(name, value, minimum))


def _webhook(read: _Reader) -> dict[str, Any]:
    url = read.raw("webhook_url")
    if url is None:
        return {}
    url = _url("WEBHOOK_URL", url)
    if not url.startswith("https://"):
        raise ConfigError(f"WEBHOOK_URL must be an https URL (Telegram requires it), got {url!r}")
    secret = read.raw("webhook_secret")
    if secret is None:
        raise ConfigError("WEBHOOK_SECRET is required with WEBHOOK_URL (see .env.example)")
    if not _SECRET_RE.match(secret):
        raise ConfigError("WEBHOOK_SECRET must be 1-256 of the letters A-Z, a-z, digits, _ and -")
    return {
        "webhook_url": url,
        "webhook_listen": read.text("webhook_listen"),
        "webhook_port": read.integer("webhook_port", 1, 65535),
        "webhook_secret": secret,
    }


def _webapp(read: _Reader) -> dict[str, Any]:
    url = read.raw("webapp_url")
    if url is None:
        return {}
    url = _url("WEBAPP_URL", url)
    if not url.startswith("https://"):
        raise ConfigError(f"WEBAPP_URL must be an https URL (Telegram opens only those), "
                          f"got {url!r}")
    return {
        "webapp_url": url,
        "webapp_listen": read.text("webapp_listen"),
        "webapp_port": read.integer("webapp_port", 1, 65535),
    }


def _health(read: _Reader, poll_interval: int) -> dict[str, int]:
    # Three polls missed in a row, and never less than an hour: arXiv itself is often slow.
    arxiv_default = max(3 * poll_interval, HEALTH_MIN_ARXIV_AGE)
    arxiv = read.raw("health_max_arxiv_age_seconds")
    return {
        "health_max_arxiv_age_seconds": _int(
            "HEALTH_MAX_ARXIV_AGE_SECONDS", arxiv or str(arxiv_default), 60, 30 * DAY),
        "health_max_telegram_age_seconds": read.integer(
            "health_max_telegram_age_seconds", 120, 30 * DAY),
    }


def _archives(name: str, value: str) -> tuple[str, ...]:
    items = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    for item in items:
        if not _CATEGORY_RE.match(item):
            raise ConfigError(f"{name} must list arXiv archives or categories, got {item!r}")
    return items


def _database_path(name: str, value: str) -> Path:
    path = Path(value).expanduser()
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        message = f"{name}: cannot create folder {str(folder)!r} ({exc.strerror})"
        raise ConfigError(message) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{name}: folder {str(folder)!r} is not writable")
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise ConfigError(f"{name}: {str(path)!r} is not readable and writable")
    return path


DATABASE_SCHEMES = ("sqlite", "postgresql", "postgres")
_DATABASE_FORMS = ("sqlite:///path/to/bot.sqlite3 or "
                   "postgresql://user:password@host:5432/dbname")


def database_secrets(url: str | None) -> list[str]:
    """A database URL's password, as written in it and percent-decoded."""
    if not url:
        return []
    try:
        password = urlsplit(url).password
    except ValueError:
        return []
    return [p for p in dict.fromkeys((password, unquote(password or ""))) if p]


def hide_password(url: str) -> str:
    """The URL with its password shown as ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=f"{user}:***@{host}").geturl()


def _database(read: _Reader) -> dict[str, Any]:
    """DATABASE_URL, or DATABASE_PATH's SQLite file: what storage opens."""
    path_value = read.raw("database_path")
    url = read.raw("database_url")
    if url is None:
        return {"database_path": _database_path(
            "DATABASE_PATH", path_value or str(_DEFAULTS["database_path"]))}
    shown = hide_password(url) if "@" in url else url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise ConfigError(f"DATABASE_URL must be {_DATABASE_FORMS}, got {shown!r}") from None
    if parts.scheme == "sqlite":
        path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else ""
        if not path or parts.query or parts.fragment:
            raise ConfigError(f"DATABASE_URL must be {_DATABASE_FORMS}, got {shown!r}")
        if path_value is not None and Path(path_value) != Path(path):
            raise ConfigError("DATABASE_URL and DATABASE_PATH name different databases: set "
                              "one of them")
        return {"database_path": _database_path("DATABASE_URL", path)}
    if parts.scheme not in DATABASE_SCHEMES or not parts.hostname or not parts.path.strip("/"):
        raise ConfigError(f"DATABASE_URL must be {_DATABASE_FORMS}, got {shown!r}")
    if port == 0:
        raise ConfigError(f"DATABASE_URL's port must be between 1 and 65535, got {shown!r}")
    # DATABASE_PATH then names no database; it is left as it is (.env.example sets it).
    return {"database_url": url}


def load_settings(
    environ: Mapping[str, str] | None = None, env_file: Path | None = Path(".env")
) -> Settings:
    """Read settings from `environ` (default: the process environment) over the `.env` file."""
    values: dict[str, str] = {}
    if env_file is not None and env_file.is_file():
        values.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
    values.update(os.environ if environ is None else environ)
    read = _Reader(values)

    token = read.raw("telegram_bot_token")
    if token is None:
        raise ConfigError("TELEGRAM_BOT_TOKEN is not set (see .env.example)")
    if not _TOKEN_RE.match(token):
        raise ConfigError("TELEGRAM_BOT_TOKEN does not look like a bot token (digits:letters)")

    log_level = read.text("log_level").upper()
    if log_level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ConfigError(
            f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {log_level!r}"
        )

    poll_interval = read.integer("poll_interval_seconds", 1, 7 * DAY)
    llm_api_url = read.text("llm_api_url")
    llm_model = read.text("llm_model")
    if llm_api_url and not llm_model:
        raise ConfigError("LLM_MODEL must name the model when LLM_API_URL is set")
    # Unset keeps the default; blanked, like `off`, turns the source off (an operator who empties
    # it means to disable it, not to reach huggingface.co).
    hf_papers_url = ((read.raw("hf_papers_url") or "off") if read.present("hf_papers_url")
                     else _DEFAULTS["hf_papers_url"])

    secret_key = read.raw("secret_key") or ""
    if secret_key and len(secret_key) < MIN_SECRET_KEY_LENGTH:
        raise ConfigError(f"SECRET_KEY must be at least {MIN_SECRET_KEY_LENGTH} characters "
                          "(e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(32))')")

    webhook, webapp = _webhook(read), _webapp(read)
    if webhook and webapp and (webhook["webhook_listen"], webhook["webhook_port"]) == (
            webapp["webapp_listen"], webapp["webapp_port"]):
        raise ConfigError("WEBAPP_PORT must differ from WEBHOOK_PORT on the same address: "
                          "the Mini App and the webhook are two servers")

    return Settings(
        telegram_bot_token=token,
        telegram_api_url=read.url("telegram_api_url"),
        arxiv_rss_url=read.url("arxiv_rss_url"),
        arxiv_api_url=read.url("arxiv_api_url"),
        arxiv_archives=read.parsed("arxiv_archives", _archives),
        **_database(read),
        poll_interval_seconds=poll_interval,
        admin_chat_ids=read.parsed("admin_chat_ids", _ids),
        admin_user_ids=read.parsed("admin_user_ids", _ids),
        log_level=log_level,
        contact=read.text("contact"),
        arxiv_min_interval_seconds=read.number("arxiv_min_interval_seconds", 0.0),
        **webhook,
        arxiv_listing_url=read.url("arxiv_listing_url"),
        **{name: read.integer(name, 1, DAY) for name in _CALENDAR_SECONDS},
        **_health(read, poll_interval),
        send_window=read.integer("send_window", 1, 1000),
        paid_broadcast_stars_per_day=read.integer("paid_broadcast_stars_per_day", 0,
                                                  100_000_000),
        digest_messages=read.integer("digest_messages", 1, MAX_DIGEST_MESSAGES),
        llm_api_url=_url("LLM_API_URL", llm_api_url) if llm_api_url else "",
        llm_api_key=read.text("llm_api_key"),
        llm_model=llm_model,
        llm_timeout_seconds=read.integer("llm_timeout_seconds", 1, 30),
        guide_chat_daily_limit=read.integer("guide_chat_daily_limit", 0, 100_000),
        guide_daily_limit=read.integer("guide_daily_limit", 0, 10_000_000),
        hf_papers_url=(
            "" if hf_papers_url.lower() == "off" else _url("HF_PAPERS_URL", hf_papers_url)
        ),
        hf_poll_interval_seconds=read.integer("hf_poll_interval_seconds", 60, 7 * DAY),
        **webapp,
        instance_name=read.text("instance_name"),
        leader_lease_seconds=read.integer("leader_lease_seconds", 3, 60),
        secret_key=secret_key,
        zotero_api_url=read.url("zotero_api_url"),
    )


def configure_logging(settings: Settings) -> None:
    """Log to stderr at the configured level with the token filtered out of every line."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    # Also redacted at the stream (bot.core.redaction.install); the filter covers handlers that
    # tests or operators attach to other streams.
    handler.addFilter(RedactingFilter(settings.secrets()))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    # httpx logs each request URL (token included) at INFO; keep it quiet unless debugging.
    if settings.log_level != "DEBUG":
        logging.getLogger("httpx").setLevel(logging.WARNING)
        logging.getLogger("apscheduler").setLevel(logging.WARNING)
    # aiosqlite logs every statement at DEBUG, drowning the bot's own debug lines.
    logging.getLogger("aiosqlite").setLevel(logging.INFO)
    # pylatexenc reports every odd bit of TeX in a title at INFO; we fall back quietly.
    logging.getLogger("pylatexenc").setLevel(logging.WARNING)
