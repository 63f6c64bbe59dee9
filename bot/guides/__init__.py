"""AI reading guides, written on request by an OpenAI-compatible chat-completions endpoint."""
