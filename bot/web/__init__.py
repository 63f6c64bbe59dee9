"""The Mini App: the front page, the library, the subscriptions and the settings as web pages
inside Telegram, served by the bot itself (an edge beside the chat and the jobs)."""
