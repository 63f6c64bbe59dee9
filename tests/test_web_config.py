"""The Mini App's settings: off unless WEBAPP_URL is set, https only, and never the webhook's
own address and port."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, load_settings

TOKEN = "123456:TEST-token_abcdefghijklmnopqrstuvwxyz"


def settings(tmp_path: Path, **env: str):
    return load_settings({"TELEGRAM_BOT_TOKEN": TOKEN,
                          "DATABASE_PATH": str(tmp_path / "bot.sqlite3"), **env}, env_file=None)


def test_the_mini_app_is_off_by_default(tmp_path: Path) -> None:
    assert settings(tmp_path).webapp_url == ""


def test_the_mini_app_takes_its_url_address_and_port(tmp_path: Path) -> None:
    on = settings(tmp_path, WEBAPP_URL="https://bot.example.org/app/", WEBAPP_PORT="9000",
                  WEBAPP_LISTEN="0.0.0.0")
    assert (on.webapp_url, on.webapp_listen, on.webapp_port) == (
        "https://bot.example.org/app", "0.0.0.0", 9000)


@pytest.mark.parametrize(("env", "said"), [
    ({"WEBAPP_URL": "http://bot.example.org/app"}, "WEBAPP_URL must be an https URL"),
    ({"WEBAPP_URL": "https://bot.example.org", "WEBAPP_PORT": "0"}, "WEBAPP_PORT must be"),
    ({"WEBAPP_URL": "https://bot.example.org", "WEBHOOK_URL": "https://bot.example.org/hook",
      "WEBHOOK_SECRET": "s3cret", "WEBHOOK_PORT": "8444"}, "WEBAPP_PORT must differ"),
])
def test_a_bad_mini_app_setting_stops_start_up_with_one_line(
        tmp_path: Path, env: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        settings(tmp_path, **env)
