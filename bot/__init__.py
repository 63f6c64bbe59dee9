"""arXiv alerts for Telegram."""

import os

__version__ = "0.1.0"

# PTB 22 warns on every time-period attribute (RetryAfter.retry_after among them) unless the
# future behaviour, timedelta values, is chosen; we choose it once, before PTB is imported.
os.environ.setdefault("PTB_TIMEDELTA", "true")
