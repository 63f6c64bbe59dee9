"""Typed handler context: the container's services reached as properties, not casts of
`bot_data`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from telegram.ext import Application, CallbackContext, ExtBot

from bot.config import Settings
from bot.services.container import Services

if TYPE_CHECKING:
    from bot.core.models import Chat
    from bot.importer.service import LibraryImporter
    from bot.query.service import SubscriptionService


class BotContext(CallbackContext[ExtBot, dict, dict, dict]):
    """The context every handler receives."""

    def __init__(self, application: Application, chat_id: int | None = None,
                 user_id: int | None = None) -> None:
        super().__init__(application=application, chat_id=chat_id, user_id=user_id)

    @property
    def services(self) -> Services:
        return self.application.bot_data["services"]

    @property
    def settings(self) -> Settings:
        return self.services.settings

    @property
    def subscriptions(self) -> SubscriptionService:
        return self.services.subscriptions

    @property
    def importer(self) -> LibraryImporter:
        return self.services.importer

    def now(self) -> float:
        return self.services.clock.now()

    @property
    def chat_record(self) -> Chat | None:
        """The chat's row as recorded at the start of this update."""
        return self.chat_data.get("record") if self.chat_data is not None else None

    @property
    def lang(self) -> str:
        record = self.chat_record
        return record.language if record is not None else "en"
