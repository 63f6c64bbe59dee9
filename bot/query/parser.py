"""The `/follow` query language: a hand-written recursive-descent parser into a small AST.

Grammar (NOT binds tighter than AND, AND tighter than OR; juxtaposition means AND)::

    query   := or EOF
    or      := and ("OR" and)*
    and     := unary (["AND"] unary)*
    unary   := ("NOT" | "-") unary | "(" or ")" | term
    term    := [field ":"] (word | "quoted phrase") | category id

Fields are `cat:`, `au:`, `ti:` and `abs:`; a bare word or phrase searches title and abstract;
a trailing `*` makes the last word a prefix. Operators are upper-case; `and`/`or` are words.
The parser returns a normalised AST (flattened, sorted, de-duplicated), so two queries that mean
the same thing compare equal and share one `canonical` text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from bot.arxiv.taxonomy import ARCHIVES, SUBSUMED, canonical_name
from bot.core.i18n import _
from bot.query.text import PersonName, has_cjk, normalise_input, split_name, words

MAX_QUERY_LENGTH = 300
MIN_PREFIX_LENGTH = 3
_MAX_DEPTH = 12

_CATEGORY_SHAPE = re.compile(
    r"(?P<archive>[a-z]+(?:-[a-z]+)?)(?:\.(?P<sub>[a-z]+(?:-[a-z]+)?|\*))?", re.IGNORECASE
)


class QueryError(ValueError):
    """A query that cannot be used, with the 1-based column where the problem is.

    `template` is the English message id for `bot.core.i18n.t`, `values` fills its placeholders.
    """

    def __init__(self, template: str, position: int, **values: object) -> None:
        self.template = template
        self.values: dict[str, object] = {"column": position, **values}
        self.message = template.format(**self.values)
        self.position = position
        super().__init__(self.message)


# --- the AST -------------------------------------------------------------------------------

TextField = Literal["any", "ti", "abs"]


@dataclass(frozen=True, slots=True)
class Category:
    """`cat:cs.LG`: the paper is listed in this category, primary or cross-list."""

    name: str


@dataclass(frozen=True, slots=True)
class Archive:
    """`cat:cs`: the paper is listed in any category of this archive."""

    name: str


@dataclass(frozen=True, slots=True)
class Author:
    """`au:"E. Yoneki"`: one of the paper's authors has this name (see `PersonName.matches`)."""

    name: PersonName


@dataclass(frozen=True, slots=True)
class Text:
    """Words in order in the title, the abstract or either; `prefix` makes the last a prefix."""

    field: TextField
    words: tuple[str, ...]
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class Not:
    """`NOT x` or `-x`: papers that do not match `child`."""

    child: Node


@dataclass(frozen=True, slots=True)
class And:
    """Papers matching every child (sorted, at least two, none an `And`)."""

    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Papers matching any child (sorted, at least two, none an `Or`)."""

    children: tuple[Node, ...]


Term = Category | Archive | Author | Text
Node = Term | Not | And | Or


# --- canonical text ------------------------------------------------------------------------


def canonical(node: Node) -> str:
    """The canonical text of a query: `parse(canonical(parse(q))) == parse(q)`."""
    match node:
        case Category(name) | Archive(name):
            return f"cat:{name}"
        case Author(name):
            text = str(name)
            return f'au:"{text}"' if " " in text or "." in text else f"au:{text}"
        case Text(field, text_words, prefix):
            star = "*" if prefix else ""
            body = f"{' '.join(text_words)}{star}"
            if len(text_words) > 1:
                # A multi-word prefix needs no quotes: the hyphens keep it one token.
                body = f"{'-'.join(text_words)}{star}" if prefix else f'"{body}"'
            return body if field == "any" else f"{field}:{body}"
        case Not(child):
            inner = canonical(child)
            return f"NOT ({inner})" if isinstance(child, And | Or) else f"NOT {inner}"
        case And(children):
            return " ".join(f"({canonical(c)})" if isinstance(c, Or) else canonical(c)
                            for c in children)
        case Or(children):
            return " OR ".join(canonical(c) for c in children)
    raise TypeError(f"not a query node: {node!r}")


def _combine(kind: type[And] | type[Or], children: list[Node]) -> Node:
    flat: list[Node] = []
    for child in children:
        flat.extend(child.children if isinstance(child, kind) else (child,))
    unique = {(isinstance(child, Not), canonical(child)): child for child in flat}
    if len(unique) == 1:
        return next(iter(unique.values()))
    # Exclusions go last: "cat:stat.ML NOT cat:cs.LG" reads better than the other way round.
    return kind(tuple(unique[key] for key in sorted(unique)))


def _negate(child: Node) -> Node:
    return child.child if isinstance(child, Not) else Not(child)


def is_anchored(node: Node) -> bool:
    """Whether every paper the query matches must contain some positive term of it."""
    match node:
        case Not():
            return False
        case And(children):
            return any(is_anchored(c) for c in children)
        case Or(children):
            return all(is_anchored(c) for c in children)
    return True


# --- tokens --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "(" ")" "AND" "OR" "NOT" "-" "word" "phrase" "field"
    text: str
    column: int
    field: str = ""  # for kind "field": the field name, text is the value
    quoted: bool = False


_FIELDS = {"cat", "au", "ti", "abs"}
_SMART_QUOTES = str.maketrans(dict.fromkeys("“”„‟«»″", '"'))
_FIELD_RE = re.compile(r"([A-Za-z]+):")
_BREAKS = frozenset('()"')


def _read_quoted(query: str, start: int) -> tuple[str, int]:
    # `\"` inside quotes is LaTeX's umlaut (`au:"M\"uller"`), not the closing quote.
    end = start + 1
    while (end := query.find('"', end)) > 0 and query[end - 1] == "\\":
        end += 1
    if end < 0:
        raise QueryError(_("unterminated quote at column {column}"), start + 1)
    return query[start + 1:end], end + 1


def _tokenize(query: str) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    while index < len(query):
        char = query[index]
        column = index + 1
        if char.isspace():
            index += 1
            continue
        if char in "()":
            tokens.append(_Token(char, char, column))
            index += 1
            continue
        if char == '"':
            text, index = _read_quoted(query, index)
            tokens.append(_Token("phrase", text, column, quoted=True))
            continue
        if char == "-":  # a token starting with '-' is a negation: `-survey`, `-(a b)`
            tokens.append(_Token("-", "-", column))
            index += 1
            continue
        end = index
        while end < len(query) and not query[end].isspace() and query[end] not in _BREAKS:
            end += 1
        text = query[index:end]
        field = _FIELD_RE.match(text)
        if field is not None:
            name = field.group(1).lower()
            if name not in _FIELDS:
                raise QueryError(_("unknown field '{field}:' at column {column}"), column,
                                 field=field.group(1))
            value = text[field.end():]
            quoted = False
            if not value and end < len(query) and query[end] == '"':
                value, end = _read_quoted(query, end)
                quoted = True
            if not value and not quoted:
                if end < len(query) and query[end] == "(":
                    raise QueryError(
                        _("'{field}:' applies to one word or a \"quoted phrase\", "
                          "not to parentheses (column {column})"),
                        column, field=field.group(1),
                    )
                raise QueryError(_("nothing after '{field}:' at column {column}"), column,
                                 field=field.group(1))
            tokens.append(_Token("field", value, column, field=name, quoted=quoted))
        elif text in ("AND", "OR", "NOT"):
            tokens.append(_Token(text, text, column))
        else:
            tokens.append(_Token("word", text, column))
        index = end
    return tokens


# --- parsing -------------------------------------------------------------------------------


class _Parser:
    def __init__(self, query: str) -> None:
        self.query = query
        self.tokens = _tokenize(query)
        self.index = 0
        self.depth = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def end_column(self) -> int:
        return len(self.query) + 1

    def parse(self) -> Node:
        node = self.parse_or()
        token = self.peek()
        if token is not None:
            # parse_or stops only at a ')' it did not open.
            raise QueryError(_("unexpected ')' at column {column}"), token.column)
        return node

    def parse_or(self) -> Node:
        children = [self.parse_and()]
        while (token := self.peek()) is not None and token.kind == "OR":
            self.index += 1
            children.append(self.parse_and())
        return children[0] if len(children) == 1 else _combine(Or, children)

    def parse_and(self) -> Node:
        children = [self.parse_unary()]
        while (token := self.peek()) is not None and token.kind not in ("OR", ")"):
            if token.kind == "AND":
                self.index += 1
            children.append(self.parse_unary())
        return children[0] if len(children) == 1 else _combine(And, children)

    def parse_unary(self) -> Node:
        token = self.peek()
        if token is None:
            previous = self.tokens[self.index - 1] if self.index else None
            if previous is None:
                raise QueryError(_("empty query"), 1)
            if previous.kind == "(":
                raise QueryError(_("unclosed parenthesis at column {column}"), previous.column)
            raise QueryError(_("expected a term after '{operator}' at column {column}"),
                             previous.column, operator=previous.text)
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise QueryError(_("query is nested too deeply at column {column}"), token.column)
        try:
            return self._unary(token)
        finally:
            self.depth -= 1

    def _unary(self, token: _Token) -> Node:
        if token.kind in ("NOT", "-"):
            self.index += 1
            return _negate(self.parse_unary())
        if token.kind == "(":
            self.index += 1
            inner = self.peek()
            if inner is not None and inner.kind == ")":
                raise QueryError(_("empty parentheses at column {column}"), token.column)
            node = self.parse_or()
            closing = self.peek()
            if closing is None or closing.kind != ")":
                raise QueryError(_("unclosed parenthesis at column {column}"), token.column)
            self.index += 1
            return node
        if token.kind == ")":
            raise QueryError(_("unexpected ')' at column {column}"), token.column)
        if token.kind in ("AND", "OR"):
            raise QueryError(_("'{operator}' needs a term before it at column {column}"),
                             token.column, operator=token.text)
        self.index += 1
        return _term(token)


def _term(token: _Token) -> Node:
    column = token.column
    if token.kind == "field":
        if token.field == "cat":
            return _category(token.text, column, explicit=True)
        if token.field == "au":
            return _author(token.text, column)
        return _text(token.field, token.text, column, token.quoted)  # type: ignore[arg-type]
    if token.kind == "word":
        category = _category(token.text, column, explicit=False)
        if category is not None:
            return category
    return _text("any", token.text, column, token.quoted)


def _category(value: str, column: int, *, explicit: bool) -> Node | None:
    shape = _CATEGORY_SHAPE.fullmatch(value.strip())
    archive = shape.group("archive").lower() if shape else ""
    sub = shape.group("sub") if shape else None
    if shape is not None and archive in SUBSUMED and sub in (None, "*"):
        # A closed archive (`cmp-lg`) is the category that took it over (`cs.CL`).
        return Category(SUBSUMED[archive])
    if shape is not None and archive in ARCHIVES:
        if sub == "*" or (sub is None and (explicit or "-" in archive)):
            return Archive(archive)
        if sub is not None:
            category = canonical_name(f"{archive}.{sub}")
            if category is not None:
                return Category(category)
            raise QueryError(_("unknown category '{category}' at column {column}"), column,
                             category=value)
    if explicit:
        raise QueryError(_("unknown category '{category}' at column {column}"), column,
                         category=value)
    return None


def _author(value: str, column: int) -> Node:
    if "*" in value:
        raise QueryError(_("'*' works only on title and abstract words (column {column})"),
                         column)
    name = split_name(value)
    if name is None:
        raise QueryError(_("author name without letters at column {column}"), column)
    return Author(name)


def _text(field: TextField, value: str, column: int, quoted: bool) -> Node:
    prefix = not quoted and value.endswith("*")
    if prefix:
        value = value.rstrip("*")
    found = words(value)
    if not found:
        if prefix:
            raise QueryError(_("a lone '*' would match every paper (column {column})"), column)
        if quoted:
            raise QueryError(_("empty phrase at column {column}"), column)
        raise QueryError(_("'{text}' has no letters or digits (column {column})"), column,
                         text=value)
    if prefix and len(found[-1]) < MIN_PREFIX_LENGTH:
        raise QueryError(
            _("prefix '{prefix}*' at column {column} is too short: use at least {minimum} "
              "letters"),
            column, prefix=found[-1], minimum=MIN_PREFIX_LENGTH,
        )
    return Text(field, tuple(found), prefix)


def parse(query: str, *, max_length: int | None = MAX_QUERY_LENGTH) -> Node:
    """Parse a `/follow` query into its normalised AST, or raise `QueryError`.

    A canonical text may be longer than what the user typed (`cs.LG` becomes `cat:cs.LG`), so
    stored queries are re-read with `max_length=None`. Full-width symbols typed by a CJK input
    method mean their ASCII forms (`normalise_input`).
    """
    query = normalise_input(query)
    if max_length is not None and len(query) > max_length:
        raise QueryError(_("query is longer than {maximum} characters"), max_length + 1,
                         maximum=max_length)
    return _parse(query)


def cjk_terms(node: Node) -> list[str]:
    """The query's terms written in a CJK script (they rarely match arXiv's English text)."""
    match node:
        case Text(_, text_words, _):
            return [" ".join(text_words)] if any(map(has_cjk, text_words)) else []
        case Author(name):
            return [str(name)] if has_cjk(str(name)) else []
        case Not(child):
            return cjk_terms(child)
        case And(children) | Or(children):
            return [term for child in children for term in cjk_terms(child)]
    return []


# Besides letters, marks, digits, spaces and punctuation (quotes, parentheses, `:`, `*`, `-`,
# `.`, `'`, `&`, `\` …), only these symbols may appear: `C++`, `O(n^2)`, `$\alpha$`, `x=y`.
# Any other symbol (`<`, `>`, `|`, a backtick, emoji) is refused, so `<b>x</b>` is not silently
# read as the words "b x b".
_ALLOWED_SYMBOLS = frozenset("+=$^~")


def _refuse_symbols(query: str) -> None:
    for index, char in enumerate(query):
        if (unicodedata.category(char)[0] in "LMNP" or char.isspace()
                or char in _ALLOWED_SYMBOLS):
            continue
        raise QueryError(_("the character '{character}' at column {column} can't be used in a "
                           "query"), index + 1, character=char)


def _parse(query: str) -> Node:
    if not query.strip():
        raise QueryError(_("empty query"), 1)
    _refuse_symbols(query)
    # Phones turn typed quotes into curly ones; one character for one keeps the columns right.
    node = _Parser(query.translate(_SMART_QUOTES)).parse()
    if not is_anchored(node):
        raise QueryError(
            _("this query would match nearly every paper, because it only excludes; "
              "add something to look for, e.g. cat:cs.LG"),
            1,
        )
    return node
