"""The scheduled jobs: the poll and its schedule, delivery, digests, For you, upkeep."""
