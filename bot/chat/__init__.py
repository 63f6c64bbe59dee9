"""The Telegram chat edge: the PTB application, its handlers and their context."""
