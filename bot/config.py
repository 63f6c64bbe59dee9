"""Settings from the environment and `.env`; a bad value stops start-up with one clear line."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from dotenv import dotenv_values

from bot.core.constants import DAY
from bot.core.redaction import RedactingFilter, token_secrets

_TOKEN_RE = re.compile(r"^\d+:[A-Za-z0-9_-]+$")
_SECRET_RE = re.compile(r"^[A-Za-z0-9_-]{1,256}$")  # what Telegram accepts as secret_token
_CATEGORY_RE = re.compile(r"^[a-z][a-z\-]*(\.[A-Za-z\-]+)?$")


_CALENDAR_SECONDS = {
    "ARXIV_TIGHT_POLL_SECONDS": "arxiv_tight_poll_seconds",
    "ARXIV_RELAXED_POLL_SECONDS": "arxiv_relaxed_poll_seconds",
    "ARXIV_TIGHT_WINDOW_SECONDS": "arxiv_tight_window_seconds",
    "ARXIV_STALE_AFTER_SECONDS": "arxiv_stale_after_seconds",
}


class ConfigError(Exception):
    """A missing or malformed setting; its message is the one line shown to the operator."""


@dataclass(frozen=True)
class Settings:
    """Everything the bot reads from its environment."""

    telegram_bot_token: str = field(repr=False)
    telegram_api_url: str = "https://api.telegram.org"
    arxiv_rss_url: str = "https://rss.arxiv.org/rss"
    arxiv_api_url: str = "https://export.arxiv.org/api/query"
    arxiv_archives: tuple[str, ...] = ("cs",)
    database_path: Path = Path("data/bot.sqlite3")
    poll_interval_seconds: int = 900
    admin_chat_ids: frozenset[int] = frozenset()
    log_level: str = "INFO"
    contact: str = ""
    arxiv_min_interval_seconds: float = 3.0
    admin_user_ids: frozenset[int] = frozenset()
    webhook_url: str | None = None  # set: Telegram pushes updates there instead of long polling
    webhook_listen: str = "127.0.0.1"
    webhook_port: int = 8443
    webhook_secret: str | None = field(default=None, repr=False)
    # `health` reports stale beyond these ages (see bot/services/health.py).
    health_max_arxiv_age_seconds: int = 3600
    health_max_telegram_age_seconds: int = 600
    send_window: int | None = None  # None: derived from the pace and a p99 round trip

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
    arxiv_listing_url: str = "https://arxiv.org/list"
    # Polling by arXiv's calendar (bot/arxiv/freshness.py); POLL_INTERVAL_SECONDS stays the ceiling.
    arxiv_tight_poll_seconds: int = 60
    arxiv_relaxed_poll_seconds: int = 3600
    arxiv_tight_window_seconds: int = 7200
    arxiv_stale_after_seconds: int = 1800
    # AI reading guides: off while llm_api_url is empty.
    llm_api_url: str = ""
    llm_api_key: str = field(default="", repr=False)
    llm_model: str = ""
    llm_timeout_seconds: float = 30.0
    guide_chat_daily_limit: int = 20
    guide_daily_limit: int = 500
    # Hugging Face daily papers: off while hf_papers_url is empty.
    hf_papers_url: str = "https://huggingface.co/api/daily_papers"
    hf_poll_interval_seconds: int = 21600

    @property
    def guides_enabled(self) -> bool:
        return bool(self.llm_api_url)

    def secrets(self) -> list[str]:
        """What no log line or output may show: the bot token (both forms) and the LLM key."""
        return [*token_secrets(self.telegram_bot_token), *[s for s in (self.llm_api_key,) if s]]

    def __repr__(self) -> str:
        return (
            f"Settings(telegram_bot_token='***', telegram_api_url={self.telegram_api_url!r}, "
            f"arxiv_rss_url={self.arxiv_rss_url!r}, arxiv_api_url={self.arxiv_api_url!r}, "
            f"arxiv_archives={self.arxiv_archives!r}, database_path={str(self.database_path)!r}, "
            f"poll_interval_seconds={self.poll_interval_seconds}, "
            f"admin_chat_ids={sorted(self.admin_chat_ids)!r}, "
            f"admin_user_ids={sorted(self.admin_user_ids)!r}, log_level={self.log_level!r}, "
            f"webhook_url={self.webhook_url!r}, webhook_secret='***', "
            f"llm_api_url={self.llm_api_url!r}, llm_api_key='***', "
            f"llm_model={self.llm_model!r}, hf_papers_url={self.hf_papers_url!r})"
        )


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


def _webhook(values: Callable[[str], str | None]) -> dict[str, object]:
    url = values("WEBHOOK_URL")
    if url is None:
        return {}
    url = _url("WEBHOOK_URL", url)
    if not url.startswith("https://"):
        raise ConfigError(f"WEBHOOK_URL must be an https URL (Telegram requires it), got {url!r}")
    secret = values("WEBHOOK_SECRET")
    if secret is None:
        raise ConfigError("WEBHOOK_SECRET is required with WEBHOOK_URL (see .env.example)")
    if not _SECRET_RE.match(secret):
        raise ConfigError("WEBHOOK_SECRET must be 1-256 of the letters A-Z, a-z, digits, _ and -")
    return {
        "webhook_url": url,
        "webhook_listen": values("WEBHOOK_LISTEN") or Settings.webhook_listen,
        "webhook_port": _int("WEBHOOK_PORT", values("WEBHOOK_PORT") or "8443", 1, 65535),
        "webhook_secret": secret,
    }


def _health(values: Callable[[str], str | None], poll_interval: int) -> dict[str, int]:
    # Three polls missed in a row, and never less than an hour: arXiv itself is often slow.
    arxiv_default = max(3 * poll_interval, 3600)
    return {
        "health_max_arxiv_age_seconds": _int(
            "HEALTH_MAX_ARXIV_AGE_SECONDS",
            values("HEALTH_MAX_ARXIV_AGE_SECONDS") or str(arxiv_default), 60, 30 * DAY),
        "health_max_telegram_age_seconds": _int(
            "HEALTH_MAX_TELEGRAM_AGE_SECONDS",
            values("HEALTH_MAX_TELEGRAM_AGE_SECONDS") or "600", 120, 30 * DAY),
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


def load_settings(
    environ: Mapping[str, str] | None = None, env_file: Path | None = Path(".env")
) -> Settings:
    """Read settings from `environ` (default: the process environment) over the `.env` file."""
    values: dict[str, str] = {}
    if env_file is not None and env_file.is_file():
        values.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
    values.update(os.environ if environ is None else environ)

    def get(name: str, default: str | None = None) -> str | None:
        raw = values.get(name)
        if raw is None or raw.strip() == "":
            return default
        return raw.strip()

    token = get("TELEGRAM_BOT_TOKEN")
    if token is None:
        raise ConfigError("TELEGRAM_BOT_TOKEN is not set (see .env.example)")
    if not _TOKEN_RE.match(token):
        raise ConfigError("TELEGRAM_BOT_TOKEN does not look like a bot token (digits:letters)")

    log_level = (get("LOG_LEVEL", "INFO") or "INFO").upper()
    if log_level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        raise ConfigError(
            f"LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL, got {log_level!r}"
        )

    poll_interval = _int(
        "POLL_INTERVAL_SECONDS", get("POLL_INTERVAL_SECONDS", "900"), 1, 7 * 24 * 3600
    )
    llm_api_url = get("LLM_API_URL", "") or ""
    llm_model = get("LLM_MODEL", "") or ""
    if llm_api_url and not llm_model:
        raise ConfigError("LLM_MODEL must name the model when LLM_API_URL is set")
    # Unset keeps the default; blanked, like `off`, turns the source off (an operator who empties
    # it means to disable it, not to reach huggingface.co).
    hf_papers_url = (Settings.hf_papers_url if "HF_PAPERS_URL" not in values
                     else get("HF_PAPERS_URL", "off") or "off")

    return Settings(
        telegram_bot_token=token,
        telegram_api_url=_url(
            "TELEGRAM_API_URL", get("TELEGRAM_API_URL", Settings.telegram_api_url)
        ),
        arxiv_rss_url=_url("ARXIV_RSS_URL", get("ARXIV_RSS_URL", Settings.arxiv_rss_url)),
        arxiv_api_url=_url("ARXIV_API_URL", get("ARXIV_API_URL", Settings.arxiv_api_url)),
        arxiv_archives=_archives("ARXIV_ARCHIVES", get("ARXIV_ARCHIVES", "cs")),
        database_path=_database_path("DATABASE_PATH", get("DATABASE_PATH", "data/bot.sqlite3")),
        poll_interval_seconds=poll_interval,
        admin_chat_ids=_ids("ADMIN_CHAT_IDS", get("ADMIN_CHAT_IDS", "")),
        admin_user_ids=_ids("ADMIN_USER_IDS", get("ADMIN_USER_IDS", "")),
        log_level=log_level,
        contact=get("CONTACT", "") or "",
        arxiv_min_interval_seconds=_float(
            "ARXIV_MIN_INTERVAL_SECONDS", get("ARXIV_MIN_INTERVAL_SECONDS", "3"), 0.0
        ),
        **_webhook(get),  # type: ignore[arg-type]
        arxiv_listing_url=_url(
            "ARXIV_LISTING_URL", get("ARXIV_LISTING_URL", Settings.arxiv_listing_url)
        ),
        **{
            field_name: _int(name, get(name, str(getattr(Settings, field_name))), 1, DAY)
            for name, field_name in _CALENDAR_SECONDS.items()
        },
        **_health(get, poll_interval),
        send_window=None if (window := get("SEND_WINDOW")) is None
        else _int("SEND_WINDOW", window, 1, 1000),
        llm_api_url=_url("LLM_API_URL", llm_api_url) if llm_api_url else "",
        llm_api_key=get("LLM_API_KEY", "") or "",
        llm_model=llm_model,
        llm_timeout_seconds=_int(
            "LLM_TIMEOUT_SECONDS", get("LLM_TIMEOUT_SECONDS", "30"), 1, 30
        ),
        guide_chat_daily_limit=_int(
            "GUIDE_CHAT_DAILY_LIMIT", get("GUIDE_CHAT_DAILY_LIMIT", "20"), 0, 100_000
        ),
        guide_daily_limit=_int("GUIDE_DAILY_LIMIT", get("GUIDE_DAILY_LIMIT", "500"), 0, 10_000_000),
        hf_papers_url=(
            "" if hf_papers_url.lower() == "off" else _url("HF_PAPERS_URL", hf_papers_url)
        ),
        hf_poll_interval_seconds=_int(
            "HF_POLL_INTERVAL_SECONDS", get("HF_POLL_INTERVAL_SECONDS", "21600"), 60, 7 * 24 * 3600
        ),
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
