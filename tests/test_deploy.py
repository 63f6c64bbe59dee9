"""Installable as a service: the console script, and a systemd unit that systemd accepts."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot import __version__

ROOT = Path(__file__).resolve().parents[1]
UNIT = ROOT / "deploy" / "arxiv-alert-bot.service"
SCRIPT = Path(sys.executable).parent / "arxiv-alert-bot"
INSTALLED_AT = "/opt/arxiv-alert-bot/bin/arxiv-alert-bot"


def test_the_console_script_runs_the_bot_cli() -> None:
    result = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0
    assert __version__ in result.stdout


def unit_settings() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(UNIT.read_text())
    return parser


def test_the_unit_restarts_on_failure_as_its_own_user_with_a_data_folder() -> None:
    service = unit_settings()["Service"]
    assert service["Restart"] == "on-failure"
    assert service["RestartPreventExitStatus"] == "2", "configuration errors are not retried"
    assert service["User"] == "arxiv-alert-bot" and service["Group"] == "arxiv-alert-bot"
    assert service["StateDirectory"] == "arxiv-alert-bot"
    assert service["Environment"].startswith("DATABASE_PATH=/var/lib/arxiv-alert-bot/")
    assert int(service["TimeoutStopSec"]) > 10, "the bot stops within 10 s; systemd waits longer"
    assert service["ExecStart"] == f"{INSTALLED_AT} run"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None,
                    reason="systemd-analyze is not installed (apt-get install systemd)")
def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path) -> None:
    # verify checks that ExecStart exists: point it at this environment's console script.
    unit = tmp_path / UNIT.name
    unit.write_text(UNIT.read_text().replace(INSTALLED_AT, str(SCRIPT)))
    result = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                            text=True, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # verify only warns (exit 0) about unknown keys and bad values: any mention is a defect.
    assert UNIT.name not in output, output
