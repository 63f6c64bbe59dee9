"""Settings: defaults, .env, and one clear line for every bad value."""

from __future__ import annotations

import dataclasses
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import ConfigError, load_settings
from bot.core.redaction import RedactingFilter

TOKEN = "123456:ABC-def_ghi"


def settings_from(env: dict[str, str], tmp_path: Path, env_file: Path | None = None):
    env = {"DATABASE_PATH": str(tmp_path / "db" / "bot.sqlite3"), **env}
    return load_settings(env, env_file=env_file)


def test_defaults_follow_the_spec(tmp_path: Path) -> None:
    settings = settings_from({"TELEGRAM_BOT_TOKEN": TOKEN}, tmp_path)
    assert settings.telegram_api_url == "https://api.telegram.org"
    assert settings.arxiv_rss_url == "https://rss.arxiv.org/rss"
    assert settings.arxiv_api_url == "https://export.arxiv.org/api/query"
    assert settings.arxiv_archives == ("cs",)
    assert settings.poll_interval_seconds == 3600
    assert settings.admin_chat_ids == frozenset()
    assert settings.log_level == "INFO"
    assert (tmp_path / "db").is_dir(), "the database folder is created on start"


def test_env_file_is_read_and_the_environment_wins(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(
        f"TELEGRAM_BOT_TOKEN={TOKEN}\nPOLL_INTERVAL_SECONDS=60\nADMIN_CHAT_IDS=1, -1002\n"
        "ARXIV_ARCHIVES=cs,math.AG\n"
    )
    settings = settings_from({"POLL_INTERVAL_SECONDS": "120"}, tmp_path, env_file)
    assert settings.telegram_bot_token == TOKEN
    assert settings.poll_interval_seconds == 120
    assert settings.admin_chat_ids == {1, -1002}
    assert settings.arxiv_archives == ("cs", "math.AG")


def test_the_token_never_shows_in_repr(tmp_path: Path) -> None:
    settings = settings_from({"TELEGRAM_BOT_TOKEN": TOKEN}, tmp_path)
    assert TOKEN not in repr(settings)
    assert "ABC-def_ghi" not in str(settings)


def test_repr_shows_every_setting_and_hides_every_secret(tmp_path: Path) -> None:
    secrets = {"TELEGRAM_BOT_TOKEN": TOKEN, "WEBHOOK_SECRET": "hook-secret_0123456789",
               "LLM_API_KEY": "sk-llm-key-4567"}
    settings = settings_from({**secrets, "WEBHOOK_URL": "https://bot.example.org/hook",
                              "LLM_API_URL": "http://127.0.0.1:9/v1", "LLM_MODEL": "m"},
                             tmp_path)
    shown = repr(settings)
    for value in (*secrets.values(), "ABC-def_ghi"):
        assert value not in shown
    for name in (f.name for f in dataclasses.fields(settings)):
        assert f"{name}=" in shown, name
    assert "webhook_secret='***'" in shown and "llm_api_key='***'" in shown
    assert "hf_poll_interval_seconds=21600" in shown


def test_every_secret_is_redacted_from_the_logs(tmp_path: Path) -> None:
    settings = settings_from({"TELEGRAM_BOT_TOKEN": TOKEN, "LLM_API_KEY": "sk-llm-key-4567",
                              "WEBHOOK_URL": "https://bot.example.org/hook",
                              "WEBHOOK_SECRET": "hook-secret_0123456789"}, tmp_path)
    record = logging.LogRecord("telegram.Bot", logging.DEBUG, __file__, 1,
                               "Calling Bot API endpoint `setWebhook` with parameters `%s`",
                               ({"secret_token": "hook-secret_0123456789", "key": "sk-llm-key-4567",
                                 "url": f"/bot{TOKEN}/setWebhook"},), None)
    RedactingFilter(settings.secrets()).filter(record)
    message = record.getMessage()
    assert "hook-secret_0123456789" not in message
    assert "sk-llm-key-4567" not in message and "ABC-def_ghi" not in message


def test_unset_settings_take_the_defaults_written_on_settings(tmp_path: Path) -> None:
    settings = settings_from({"TELEGRAM_BOT_TOKEN": TOKEN}, tmp_path)
    for f in dataclasses.fields(settings):
        if f.name not in ("telegram_bot_token", "database_path"):
            assert getattr(settings, f.name) == f.default, f.name


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({}, "TELEGRAM_BOT_TOKEN is not set"),
        ({"TELEGRAM_BOT_TOKEN": "nope"}, "TELEGRAM_BOT_TOKEN"),
        ({"POLL_INTERVAL_SECONDS": "soon"}, "POLL_INTERVAL_SECONDS must be a whole number"),
        ({"POLL_INTERVAL_SECONDS": "0"}, "POLL_INTERVAL_SECONDS must be between"),
        ({"TELEGRAM_API_URL": "ftp://x"}, "TELEGRAM_API_URL must be an http(s) URL"),
        ({"ARXIV_RSS_URL": "not a url"}, "ARXIV_RSS_URL must be an http(s) URL"),
        ({"ADMIN_CHAT_IDS": "12,abc"}, "ADMIN_CHAT_IDS"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
        ({"ARXIV_ARCHIVES": "cs,<b>"}, "ARXIV_ARCHIVES"),
        ({"DIGEST_MESSAGES": "0"}, "DIGEST_MESSAGES must be between 1 and 10"),
        ({"DIGEST_MESSAGES": "11"}, "DIGEST_MESSAGES must be between 1 and 10"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], names: str, tmp_path: Path) -> None:
    base = {} if env == {} else {"TELEGRAM_BOT_TOKEN": TOKEN}
    with pytest.raises(ConfigError, match=names.replace("(", r"\(").replace(")", r"\)")):
        settings_from({**base, **env}, tmp_path)


@pytest.mark.parametrize("blank", ["", "   ", "off", "OFF"])
def test_a_blank_or_off_hugging_face_url_turns_the_source_off(blank: str, tmp_path: Path) -> None:
    settings = settings_from({"TELEGRAM_BOT_TOKEN": TOKEN, "HF_PAPERS_URL": blank}, tmp_path)
    assert settings.hf_papers_url == ""


def test_a_blank_hugging_face_url_in_the_env_file_turns_the_source_off(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text(f"TELEGRAM_BOT_TOKEN={TOKEN}\nHF_PAPERS_URL=\n")
    assert settings_from({}, tmp_path, env_file).hf_papers_url == ""


def test_an_unset_hugging_face_url_keeps_the_default(tmp_path: Path) -> None:
    settings = settings_from({"TELEGRAM_BOT_TOKEN": TOKEN}, tmp_path)
    assert settings.hf_papers_url == "https://huggingface.co/api/daily_papers"


def test_unwritable_database_folder_is_refused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="DATABASE_PATH"):
        load_settings({"TELEGRAM_BOT_TOKEN": TOKEN,
                       "DATABASE_PATH": str(blocker / "sub" / "bot.sqlite3")}, env_file=None)


def run_bot(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TELEGRAM_", "ARXIV_"))}
    return subprocess.run(
        [sys.executable, "-m", "bot"], env={**clean, **env}, cwd=cwd,
        capture_output=True, text=True, timeout=60,
    )


def test_without_a_token_the_bot_exits_2_with_one_line(tmp_path: Path) -> None:
    result = run_bot({"PYTHONPATH": str(Path(__file__).parents[1])}, tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "config error: TELEGRAM_BOT_TOKEN is not set (see .env.example)"
    ]


def test_a_bad_interval_exits_2_naming_it(tmp_path: Path) -> None:
    result = run_bot({"PYTHONPATH": str(Path(__file__).parents[1]),
                      "TELEGRAM_BOT_TOKEN": TOKEN, "POLL_INTERVAL_SECONDS": "ten"}, tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "POLL_INTERVAL_SECONDS" in lines[0]
    assert "Traceback" not in result.stderr


def test_the_redacting_filter_hides_the_token_in_messages_args_and_tracebacks() -> None:
    secret = TOKEN.split(":")[1]
    record = logging.LogRecord("httpx", logging.INFO, __file__, 1,
                               "HTTP Request: POST %s", (f"http://x/bot{TOKEN}/getMe",), None)
    try:
        raise RuntimeError(f"failed at /bot{TOKEN}/sendMessage")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    RedactingFilter([TOKEN, secret]).filter(record)
    assert secret not in record.getMessage()
    assert secret not in (record.exc_text or "")
    assert "***" in record.getMessage()


PG_URL = "postgresql://arxivbot:s3cr%40t-pw@db.internal:5433/arxivbot"


def test_the_database_is_sqlite_at_database_path_unless_database_url_names_one(
        tmp_path: Path) -> None:
    settings = settings_from({"TELEGRAM_BOT_TOKEN": TOKEN}, tmp_path)
    assert settings.database == f"sqlite:///{tmp_path / 'db' / 'bot.sqlite3'}"
    path = tmp_path / "other" / "bot.sqlite3"
    settings = load_settings({"TELEGRAM_BOT_TOKEN": TOKEN, "DATABASE_URL": f"sqlite:///{path}"},
                             env_file=None)
    assert settings.database_path == path and settings.database == f"sqlite:///{path}"
    assert (tmp_path / "other").is_dir(), "the database folder is created on start"
    settings = settings_from({"TELEGRAM_BOT_TOKEN": TOKEN, "DATABASE_URL": PG_URL}, tmp_path)
    assert settings.database == PG_URL


def test_the_database_password_is_hidden_in_the_settings_and_redacted_from_logs(
        tmp_path: Path) -> None:
    settings = settings_from({"TELEGRAM_BOT_TOKEN": TOKEN, "DATABASE_URL": PG_URL}, tmp_path)
    assert "s3cr" not in repr(settings)
    assert "postgresql://arxivbot:***@db.internal:5433/arxivbot" in repr(settings)
    record = logging.LogRecord("bot", logging.ERROR, __file__, 1, "cannot reach %s (%s)",
                               (PG_URL, "password s3cr@t-pw refused"), None)
    RedactingFilter(settings.secrets()).filter(record)
    assert "s3cr" not in record.getMessage()


@pytest.mark.parametrize("url", [
    "mysql://u:p@host/db", "postgresql://u:p@/db", "postgresql://u:p@host:5432/",
    "postgresql://u:p@host:99999/db", "sqlite://relative.db", "sqlite:///", "not a url",
])
def test_a_malformed_database_url_is_refused_naming_it_without_its_password(
        url: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="DATABASE_URL") as raised:
        settings_from({"TELEGRAM_BOT_TOKEN": TOKEN, "DATABASE_URL": url}, tmp_path)
    assert ":p@" not in str(raised.value)


def test_database_url_and_database_path_naming_two_sqlite_files_are_refused(
        tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="set one of them"):
        settings_from({"TELEGRAM_BOT_TOKEN": TOKEN,
                       "DATABASE_URL": f"sqlite:///{tmp_path / 'a.sqlite3'}"}, tmp_path)


def test_a_malformed_database_url_exits_2_with_one_line(tmp_path: Path) -> None:
    result = run_bot({"PYTHONPATH": str(Path(__file__).parents[1]), "TELEGRAM_BOT_TOKEN": TOKEN,
                      "DATABASE_URL": "postgresql://bot:hunter2@:5432/db"}, tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "DATABASE_URL" in lines[0], result.stderr
    assert "hunter2" not in result.stderr and "Traceback" not in result.stderr
