"""Forum topics' names, as the bot learns them from what Telegram sends in each topic."""

from __future__ import annotations

from bot.storage import Storage


class ForumTopics:
    """The names a forum's topics go by, for /list, /move and the alerts' topic labels."""

    def __init__(self, storage: Storage) -> None:
        self._storage = storage

    async def named(self, chat_id: int, topic_id: int, name: str) -> None:
        """The topic was created or renamed: this is its name now."""
        await self._storage.topics.remember(chat_id, topic_id, name)

    async def opened_as(self, chat_id: int, topic_id: int, name: str) -> None:
        """A message replies to the topic's opening message, which names it: learnt only if
        no name is known (a topic made before the bot joined), since a rename is newer."""
        if not await self._storage.topics.knows(chat_id, topic_id):
            await self._storage.topics.remember(chat_id, topic_id, name)

    async def names(self, chat_id: int) -> dict[int, str]:
        """Each topic's name, by topic id, of those learnt."""
        return await self._storage.topics.names(chat_id)
