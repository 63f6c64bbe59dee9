"""Inline-button callback data: versioned, compact (Telegram allows 64 bytes) and parsed here only.

Wire format: `v1:<kind>:<fields…>`, fields separated by `:`.

| kind | data | action |
| --- | --- | --- |
| `s` | `v1:s:2611.11450v2` or `v1:s:2611.11450v2:7` | toggle Save (`:7` = entry 7 of a digest) |
| `a` | `v1:a:2611.11450v2:1` | show the full abstract (`1`) or collapse it (`0`) |
| `u` | `v1:u:42` | remove subscription row 42 (the handler checks it belongs to the chat) |
| `p` | `v1:p:3` | show page 3 (1-based) of the saved library |
| `r` | `v1:r:2611.11450:3` | remove a paper from the saved library, then show page 3 |
| `f` | `v1:f:2611.11450:m:1` | 👍 (`m`) or 👎 (`l`): give the label (`1`), clear it (`0`) |
| `i` | `v1:i:2611.11450` | list the stored papers nearest to a paper (🔎 in /saved) |
| `n` | `v1:n` | a label-only button (e.g. the page counter); does nothing |
| `m` | `v1:m:30`, `v1:m:30:512`| a capped digest's rest after 30 entries of this message (or 512) |
| `d` | `v1:d:25:0`, `v1:d:42:17:512`| behind More: rows from 0 (17 of 512's), numbered 26 on |
| `g` | `v1:g:2611.11450v2` | write (or show the cached) AI reading guide of that version |
| `x` | `v1:x:1`, `v1:x:0` | `/forget`: erase the chat's data (`1`), or keep it (`0`) |

Button data can be forged by any client, so every field is validated and anything unexpected
decodes to None; ownership (a subscription row belonging to the pressing chat) is the handler's
check.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from telegram.constants import InlineKeyboardButtonLimit

from bot.core.models import ArxivId, Feedback

VERSION = "v1"
MAX_BYTES = InlineKeyboardButtonLimit.MAX_CALLBACK_DATA  # 64 bytes
MAX_PAPER_VERSION = 999
MAX_DIGEST_NUMBER = 999
MAX_PAGE = 100_000
MAX_ROW_ID = 2**63 - 1  # SQLite's largest rowid

_NUMBER = re.compile(r"0|[1-9][0-9]{0,18}")


def _check_number(name: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in {low}..{high}, got {value!r}")


def _check_id(arxiv_id: ArxivId) -> None:
    if (not isinstance(arxiv_id, ArxivId) or not str(arxiv_id).isascii()
            or ArxivId.parse(str(arxiv_id)) != arxiv_id):
        raise ValueError(f"not a canonical arXiv id: {arxiv_id!r}")
    if arxiv_id.version is not None:
        _check_number("version", arxiv_id.version, 1, MAX_PAPER_VERSION)


@dataclass(frozen=True, slots=True)
class ToggleSave:
    """Save or unsave a paper; `number` is set on the numbered buttons of a digest."""

    paper: ArxivId  # with the version the message showed, when known
    number: int | None = None

    def __post_init__(self) -> None:
        _check_id(self.paper)
        if self.number is not None:
            _check_number("number", self.number, 1, MAX_DIGEST_NUMBER)


@dataclass(frozen=True, slots=True)
class ToggleAbstract:
    """Expand (`expand=True`) or collapse the abstract of one paper version's message."""

    paper: ArxivId
    expand: bool

    def __post_init__(self) -> None:
        _check_id(self.paper)
        if self.paper.version is None:
            raise ValueError("the abstract button needs a versioned id")
        if not isinstance(self.expand, bool):
            raise ValueError(f"expand must be a bool, got {self.expand!r}")


@dataclass(frozen=True, slots=True)
class Unfollow:
    """Remove a subscription by its global row id (the handler checks the chat owns it)."""

    subscription_id: int

    def __post_init__(self) -> None:
        _check_number("subscription_id", self.subscription_id, 1, MAX_ROW_ID)


@dataclass(frozen=True, slots=True)
class SavedPage:
    """Show one page (1-based) of the chat's saved library."""

    page: int

    def __post_init__(self) -> None:
        _check_number("page", self.page, 1, MAX_PAGE)


@dataclass(frozen=True, slots=True)
class RemoveSaved:
    """Remove a paper from the saved library, then show `page` again."""

    paper: ArxivId  # base id, no version: the library holds papers, not versions
    page: int

    def __post_init__(self) -> None:
        _check_id(self.paper)
        if self.paper.version is not None:
            raise ValueError("a saved paper is identified by its base id")
        _check_number("page", self.page, 1, MAX_PAGE)


@dataclass(frozen=True, slots=True)
class DigestMore:
    """Show the entries of a capped digest after the first `offset` of those a message holds:
    the message with the button, or `message_id` when the button sits on a follow-up. The
    button of digests sent before `DigestRest`, kept so that theirs still work."""

    offset: int
    message_id: int | None = None

    def __post_init__(self) -> None:
        _check_number("offset", self.offset, 0, MAX_ROW_ID)
        if self.message_id is not None:
            _check_number("message_id", self.message_id, 1, MAX_ROW_ID)


@dataclass(frozen=True, slots=True)
class DigestRest:
    """The next page of the rows a digest keeps behind its More button: those after the first
    `offset` of them, numbered on from `numbered` (the digest's entries shown before), behind
    the message with the button, or behind `message_id` when the button sits on a page.

    (`DigestMore` is the older button, on digests sent before their rest was kept apart.)"""

    numbered: int
    offset: int
    message_id: int | None = None

    def __post_init__(self) -> None:
        _check_number("numbered", self.numbered, 0, MAX_ROW_ID)
        _check_number("offset", self.offset, 0, MAX_ROW_ID)
        if self.message_id is not None:
            _check_number("message_id", self.message_id, 1, MAX_ROW_ID)


@dataclass(frozen=True, slots=True)
class ShowGuide:
    """The AI reading guide of one paper version."""

    paper: ArxivId

    def __post_init__(self) -> None:
        _check_id(self.paper)
        if self.paper.version is None:
            raise ValueError("the guide button needs a versioned id")


@dataclass(frozen=True, slots=True)
class Rate:
    """A 👍 or 👎 press: give the paper `label`, or clear it (`give` False, the button was lit).

    The data says what the press does, as the keyboard showed it, so two quick presses of one
    button both do the same thing instead of undoing each other.
    """

    paper: ArxivId  # base id, no version: labels are per paper
    label: Feedback
    give: bool

    def __post_init__(self) -> None:
        _check_id(self.paper)
        if self.paper.version is not None:
            raise ValueError("a label is given to a paper's base id")
        if not isinstance(self.label, Feedback):
            raise ValueError(f"not a feedback label: {self.label!r}")
        if not isinstance(self.give, bool):
            raise ValueError(f"give must be a bool, got {self.give!r}")


@dataclass(frozen=True, slots=True)
class ShowSimilar:
    """List the stored papers nearest to a paper of the library."""

    paper: ArxivId  # base id

    def __post_init__(self) -> None:
        _check_id(self.paper)
        if self.paper.version is not None:
            raise ValueError("similar papers are found for a base id")


_LABEL_CODES = {Feedback.MORE: "m", Feedback.LESS: "l"}
_LABELS_BY_CODE = {code: label for label, code in _LABEL_CODES.items()}


@dataclass(frozen=True, slots=True)
class Forget:
    """`/forget`'s buttons: erase everything the bot keeps about the chat, or keep it."""

    confirm: bool

    def __post_init__(self) -> None:
        if not isinstance(self.confirm, bool):
            raise ValueError(f"confirm must be a bool, got {self.confirm!r}")


@dataclass(frozen=True, slots=True)
class Noop:
    """A button that only shows a label, such as the page counter."""


Action = (ToggleSave | ToggleAbstract | Unfollow | SavedPage | RemoveSaved | DigestMore
          | DigestRest | ShowGuide | Rate | ShowSimilar | Forget | Noop)


def encode(action: Action) -> str:
    """Callback data for `action`; ValueError if it would not fit in Telegram's 64 bytes."""
    match action:
        case ToggleSave(paper=paper, number=None):
            fields = ["s", str(paper)]
        case ToggleSave(paper=paper, number=number):
            fields = ["s", str(paper), str(number)]
        case ToggleAbstract(paper=paper, expand=expand):
            fields = ["a", str(paper), "1" if expand else "0"]
        case Unfollow(subscription_id=row_id):
            fields = ["u", str(row_id)]
        case SavedPage(page=page):
            fields = ["p", str(page)]
        case RemoveSaved(paper=paper, page=page):
            fields = ["r", str(paper), str(page)]
        case DigestMore(offset=offset, message_id=None):
            fields = ["m", str(offset)]
        case DigestMore(offset=offset, message_id=message_id):
            fields = ["m", str(offset), str(message_id)]
        case DigestRest(numbered=numbered, offset=offset, message_id=None):
            fields = ["d", str(numbered), str(offset)]
        case DigestRest(numbered=numbered, offset=offset, message_id=message_id):
            fields = ["d", str(numbered), str(offset), str(message_id)]
        case ShowGuide(paper=paper):
            fields = ["g", str(paper)]
        case Rate(paper=paper, label=label, give=give):
            fields = ["f", str(paper), _LABEL_CODES[label], "1" if give else "0"]
        case ShowSimilar(paper=paper):
            fields = ["i", str(paper)]
        case Forget(confirm=confirm):
            fields = ["x", "1" if confirm else "0"]
        case Noop():
            fields = ["n"]
        case _:
            raise TypeError(f"not a callback action: {action!r}")
    data = ":".join([VERSION, *fields])
    if len(data.encode()) > MAX_BYTES:
        raise ValueError(f"callback data over {MAX_BYTES} bytes: {data!r}")
    return data


def decode(data: object) -> Action | None:
    """The action in callback data, or None for anything malformed, stale or forged."""
    if not isinstance(data, str) or not data.isascii() or len(data) > MAX_BYTES:
        return None
    version, _, rest = data.partition(":")
    if version != VERSION:
        return None
    kind, *fields = rest.split(":")
    try:
        return _decode_fields(kind, fields)
    except ValueError:  # a field failed its dataclass's validation
        return None


def _decode_fields(kind: str, fields: list[str]) -> Action | None:
    match kind, fields:
        case "s", [paper]:
            return _with_id(paper, lambda p: ToggleSave(p))
        case "s", [paper, number]:
            n = _int(number)
            return None if n is None else _with_id(paper, lambda p: ToggleSave(p, n))
        case "a", [paper, ("0" | "1") as flag]:
            return _with_id(paper, lambda p: ToggleAbstract(p, flag == "1"))
        case "u", [row_id]:
            n = _int(row_id)
            return None if n is None else Unfollow(n)
        case "p", [page]:
            n = _int(page)
            return None if n is None else SavedPage(n)
        case "r", [paper, page]:
            n = _int(page)
            return None if n is None else _with_id(paper, lambda p: RemoveSaved(p, n))
        case "m", [offset]:
            n = _int(offset)
            return None if n is None else DigestMore(n)
        case "m", [offset, message_id]:
            n, m = _int(offset), _int(message_id)
            return None if n is None or m is None else DigestMore(n, m)
        case "d", [numbered, offset, *message_id] if len(message_id) <= 1:
            numbers = [_int(field) for field in (numbered, offset, *message_id)]
            return None if None in numbers else DigestRest(*numbers)
        case "g", [paper]:
            return _with_id(paper, lambda p: ShowGuide(p))
        case "f", [paper, ("m" | "l") as code, ("0" | "1") as flag]:
            return _with_id(paper, lambda p: Rate(p, _LABELS_BY_CODE[code], flag == "1"))
        case "i", [paper]:
            return _with_id(paper, lambda p: ShowSimilar(p))
        case "x", [("0" | "1") as flag]:
            return Forget(flag == "1")
        case "n", []:
            return Noop()
    return None


def _int(text: str) -> int | None:
    """A canonical non-negative decimal (no sign, no leading zeros, at most 19 digits)."""
    return int(text) if _NUMBER.fullmatch(text) else None


def _with_id(text: str, build: Callable[[ArxivId], Action]) -> Action | None:
    parsed = ArxivId.parse(text)
    # Only the canonical spelling is accepted, so data round-trips and has one meaning.
    if parsed is None or str(parsed) != text:
        return None
    return build(parsed)


# Deep links (t.me/<bot>?start=<payload>) allow only A-Z a-z 0-9 _ - in 64 characters: an id's
# dot becomes "_" and an old-style id's slash "__" (neither is in any arXiv id).
_START_PAPER = "paper_"


def paper_start(arxiv_id: ArxivId) -> str:
    """The start parameter of a link that opens `arxiv_id`'s card in the bot."""
    return _START_PAPER + str(arxiv_id).replace("/", "__").replace(".", "_")


def paper_of_start(payload: str) -> ArxivId | None:
    """The paper a start parameter names (see `paper_start`), or None: any client may send
    any start parameter."""
    if not payload.startswith(_START_PAPER) or len(payload) > 64:
        return None
    return ArxivId.parse(payload.removeprefix(_START_PAPER).replace("__", "/").replace("_", "."))
