"""Importing into the library: an uploaded .bib or ID list, a message of IDs, or /import."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import httpx
from telegram import File, Message, Update
from telegram.constants import ChatType
from telegram.error import TelegramError

from bot.chat.context import BotContext
from bot.chat.handlers.common import command_argument, group_member, reply
from bot.chat.progress import Progress
from bot.core.http import BodyTooLarge, polite_client, read_capped
from bot.core.i18n import t, tn
from bot.importer.parse import (
    MAX_IMPORT_BYTES,
    MAX_IMPORT_ENTRIES,
    ImportProblem,
    ImportRefused,
    ImportSource,
    SourceKind,
    read_id_list,
    read_upload,
)
from bot.importer.service import ImportReport

log = logging.getLogger(__name__)

# In a group a file is for the bot only when its caption says so; in a private chat, always.
IMPORT_CAPTION = re.compile(r"^/import(?:@\w+)?(?:\s|$)", re.IGNORECASE)
MIN_MESSAGE_IDS = 2  # one ID alone in a message shows that paper's card instead
DOWNLOAD_SECONDS = 60.0  # a whole upload's download: 1 MB takes well under a second
LIMIT_TEXT = f"{MAX_IMPORT_BYTES // (1024 * 1024)} MB"


def is_import_upload(message: Message) -> bool:
    """Whether a message is a file sent to be imported."""
    if message.document is None:
        return False
    return (message.chat.type == ChatType.PRIVATE
            or IMPORT_CAPTION.match(message.caption or "") is not None)


def ids_named(text: str) -> int:
    """How many papers a message names (for its cost; over the cap counts as the cap)."""
    try:
        return len(read_id_list(text).ids)
    except ImportRefused:
        return MAX_IMPORT_ENTRIES


async def on_document(update: Update, context: BotContext) -> None:
    """A file sent to the bot: its size checked before it is downloaded, then imported."""
    message = update.effective_message
    document = message.document if message is not None else None
    if document is None:
        return
    if document.file_size is not None and document.file_size > MAX_IMPORT_BYTES:
        await reply(update, context, refusal(context.lang, ImportProblem.TOO_LARGE))
        return
    try:
        file = await document.get_file()
        if file.file_size is not None and file.file_size > MAX_IMPORT_BYTES:
            await reply(update, context, refusal(context.lang, ImportProblem.TOO_LARGE))
            return
        data = await download(file, MAX_IMPORT_BYTES)
    except BodyTooLarge:
        # The sizes Telegram reported were wrong (or absent): the download itself said so.
        await reply(update, context, refusal(context.lang, ImportProblem.TOO_LARGE))
        return
    except (TelegramError, DownloadFailed) as exc:
        log.info("could not download an upload in chat %s: %s", update.effective_chat.id, exc)
        await reply(update, context, t(
            context.lang, "I could not download that file from Telegram; please send it again."))
        return
    try:
        # Off the event loop: a 1 MB BibTeX file takes a few hundred milliseconds to parse.
        source = await asyncio.to_thread(read_upload, data)
    except ImportRefused as exc:
        await reply(update, context, refusal(context.lang, exc.problem))
        return
    await run_import(update, context, source)


class DownloadFailed(Exception):
    """Telegram's file server did not hand over the file."""


async def download(file: File, limit: int) -> bytes:
    """An uploaded file's bytes, read in chunks and given up past `limit` (`BodyTooLarge`)
    whatever getFile claimed, so no more than `limit` bytes are ever held.

    PTB's `download_as_bytearray` would read it whole first. A local Bot API server (which
    allows 2 GB) may give a path on this machine instead of a URL; that is read the same way.
    """
    path = file.file_path or ""
    if not path.startswith(("http://", "https://")):
        return await asyncio.to_thread(_read_local, Path(path), limit)
    parts = urlsplit(path)
    url = urlunsplit(parts._replace(path=quote(parts.path)))  # as PTB encodes it
    try:
        async with (asyncio.timeout(DOWNLOAD_SECONDS),
                    polite_client(headers={"Accept-Encoding": "identity"},
                                  timeout=DOWNLOAD_SECONDS) as http,
                    http.stream("GET", url) as response):
            if response.status_code != 200:
                raise DownloadFailed(f"the file server answered {response.status_code}")
            return await read_capped(response, limit)
    except (httpx.HTTPError, TimeoutError) as exc:
        # Named by type only: the URL carries the bot's token.
        raise DownloadFailed(f"the download failed ({type(exc).__name__})") from None


def _read_local(path: Path, limit: int) -> bytes:
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise DownloadFailed(f"the file could not be read ({exc.strerror})") from None
    if len(data) > limit:
        raise BodyTooLarge(f"the file passed {limit} bytes")
    return data


async def import_command(update: Update, context: BotContext) -> None:
    """`/import <IDs or links>` imports them; `/import` alone explains how to import."""
    try:
        source = read_id_list(command_argument(update))
    except ImportRefused as exc:
        await reply(update, context, refusal(context.lang, exc.problem))
        return
    if not source.ids:
        await reply(update, context, usage(context.lang))
        return
    await run_import(update, context, source)


async def import_message(update: Update, context: BotContext) -> bool:
    """Import a private message that names several papers; False if it names fewer."""
    message = update.effective_message
    try:
        source = read_id_list(message.text or "") if message is not None else None
    except ImportRefused as exc:
        await reply(update, context, refusal(context.lang, exc.problem))
        return True
    if source is None or len(source.ids) < MIN_MESSAGE_IDS:
        return False
    await run_import(update, context, source)
    return True


async def run_import(update: Update, context: BotContext, source: ImportSource) -> None:
    lang = context.lang
    count = len(source.ids)
    async with Progress(update, context, tn(lang, "📥 Importing {count} paper…",
                                            "📥 Importing {count} papers…", count)) as progress:
        async def looked_up(done: int, total: int) -> None:
            await progress.advance(tn(
                lang, "📥 Importing: looked up {done} of {count} paper on arXiv…",
                "📥 Importing: looked up {done} of {count} papers on arXiv…", total, done=done))

        report = await context.importer.run(update.effective_chat.id, source, context.now(),
                                            looked_up, group_member(update))
        await progress.finish(render_report(report, lang))


def render_report(report: ImportReport, lang: str) -> str:
    """The reply to an import: recognised, added, already saved, not found, skipped and why."""
    source = report.source
    lines = [tn(lang, "📥 Import done: {count} arXiv paper recognised.",
                "📥 Import done: {count} arXiv papers recognised.", report.recognised)]
    counted = (
        (report.added, t(lang, "✅ Added to your library: {count}", count=report.added)),
        (report.already_saved, t(lang, "☑️ Already saved: {count}", count=report.already_saved)),
        (report.not_found, t(lang, "❔ Not found on arXiv: {count}", count=report.not_found)),
        (source.repeated, t(lang, "🔁 Named more than once: {count}", count=source.repeated)),
    )
    lines += [line for number, line in counted if number]
    if source.skipped:
        lines.append(t(lang, "⏭ Skipped: {count}", count=source.skipped))
        not_arxiv = (t(lang, "  • lines without an arXiv ID: {count}", count=source.not_arxiv)
                     if source.kind is SourceKind.ID_LIST
                     else t(lang, "  • entries not on arXiv: {count}", count=source.not_arxiv))
        reasons = (
            (source.not_arxiv, not_arxiv),
            (source.doi_only, t(lang, "  • entries with only a DOI: {count} (DOIs are not looked "
                                      "up for now)", count=source.doi_only)),
            (source.unreadable, t(lang, "  • unreadable BibTeX entries: {count}",
                                  count=source.unreadable)),
        )
        lines += [line for number, line in reasons if number]
    if report.unavailable:
        lines.append(t(lang, "⚠️ arXiv did not answer, so {count} could not be looked up. Send "
                             "the same file again later: what was added stays.",
                       count=report.unavailable))
    if report.added:
        lines.append(t(lang, "Saved papers teach your ranking: /stats shows it, /saved lists "
                             "them."))
    return "\n".join(lines)


def refusal(lang: str, problem: ImportProblem) -> str:
    """Why an upload or message was refused; nothing was changed."""
    text = {
        ImportProblem.TOO_LARGE: t(
            lang, "❌ That file is too large to import: the limit is {limit}. Export a smaller "
            "collection and send that.", limit=LIMIT_TEXT),
        ImportProblem.BINARY: t(
            lang, "❌ That file is not text. Send a BibTeX export (.bib) or a text file of "
            "arXiv IDs or links."),
        ImportProblem.UNRECOGNISED: t(
            lang, "❌ I found neither BibTeX entries nor arXiv IDs in that file. Send a BibTeX "
            "export (.bib) from Zotero, JabRef or Google Scholar, or a text file with arXiv IDs "
            "or links, one a line."),
        ImportProblem.TOO_MANY: t(
            lang, "❌ That is more than {limit} entries, the most one import takes. Split it "
            "and send the parts one by one.", limit=MAX_IMPORT_ENTRIES),
    }[problem]
    return text + "\n" + t(lang, "Nothing was changed.")


def usage(lang: str) -> str:
    return t(
        lang, "📥 <b>Import papers into your library</b>\n"
        "Send me a BibTeX file (.bib) exported from Zotero, JabRef or Google Scholar, or a text "
        "file or message of arXiv IDs or links. Its arXiv papers are saved to your library and "
        "teach your ranking.\n"
        "Or list them here: <code>/import 1706.03762 https://arxiv.org/abs/2211.00593</code>\n"
        "Limits: {limit} and {entries} entries a file. In a group, send the file with the "
        "caption /import.", limit=LIMIT_TEXT, entries=MAX_IMPORT_ENTRIES)
