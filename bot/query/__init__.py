"""Subscription queries: the query language, its parser and the paper matcher."""

from bot.query.matcher import Matcher, PaperFeatures, evaluate
from bot.query.parser import MAX_QUERY_LENGTH, Node, QueryError, canonical, parse

__all__ = [
    "MAX_QUERY_LENGTH",
    "Matcher",
    "Node",
    "PaperFeatures",
    "QueryError",
    "canonical",
    "evaluate",
    "parse",
]
