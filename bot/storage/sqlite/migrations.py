"""Numbered schema migrations: each applied once, in order, recorded in `schema_version`.

Times are stored as Unix seconds (REAL, UTC); lists (authors, categories, subscription ids)
as JSON text. A migration is never edited after it ships: add a new one instead. A migration is
SQL text, or an async function for rows that only Python can rewrite (it runs in the same
all-or-nothing transaction as its version row).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from bot.core.authors import clean_space, reclean

if TYPE_CHECKING:
    import aiosqlite

DataMigration = Callable[["aiosqlite.Connection"], Awaitable[None]]


async def _reclean_authors_and_keep_queries_as_typed(conn: aiosqlite.Connection) -> None:
    """Author names re-split without affiliations; each subscription's text as typed, tidied.

    Older versions cut `Franz Gähler (Institut für Physik, Universität Stuttgart)` at the comma
    inside the parentheses and kept the affiliation in the name. `raw_query` becomes the text
    shown to the chat: trimmed, whitespace collapsed, the canonical form if none was kept.
    """
    for table in ("papers", "paper_versions"):
        cursor = await conn.execute(f"SELECT rowid, authors FROM {table}")
        changed = []
        for rowid, stored in await cursor.fetchall():
            names = json.loads(stored)
            cleaned = list(reclean(names))
            if cleaned != names:
                changed.append((json.dumps(cleaned), rowid))
        await conn.executemany(f"UPDATE {table} SET authors = ? WHERE rowid = ?",
                               changed)
    cursor = await conn.execute("SELECT id, query, raw_query FROM subscriptions")
    typed = [(clean_space(raw or "") or query, sub_id)
             for sub_id, query, raw in await cursor.fetchall()]
    await conn.executemany("UPDATE subscriptions SET raw_query = ? WHERE id = ?", typed)


MIGRATIONS: tuple[tuple[int, str, str | DataMigration], ...] = (
    (
        1,
        "initial schema",
        """
        CREATE TABLE chats (
            id              INTEGER PRIMARY KEY,          -- Telegram chat id
            type            TEXT NOT NULL DEFAULT 'private',
            title           TEXT,
            language        TEXT NOT NULL DEFAULT 'en',
            language_chosen INTEGER NOT NULL DEFAULT 0,   -- 1 once /lang was used
            timezone        TEXT NOT NULL DEFAULT 'UTC',
            delivery_mode   TEXT NOT NULL DEFAULT 'instant'
                            CHECK (delivery_mode IN ('instant', 'digest')),
            digest_time     TEXT,                         -- 'HH:MM' local time in digest mode
            last_digest_at  REAL,
            paused          INTEGER NOT NULL DEFAULT 0,
            inactive_since  REAL,                         -- set on 403, cleared when it writes
            inactive_reason TEXT,
            created_at      REAL NOT NULL,
            last_seen_at    REAL NOT NULL
        );

        CREATE TABLE subscriptions (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id     INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE ON UPDATE CASCADE,
            query       TEXT NOT NULL,                    -- canonical form
            raw_query   TEXT NOT NULL,                    -- as the user typed it
            created_at  REAL NOT NULL,
            UNIQUE (chat_id, query)
        );
        CREATE INDEX subscriptions_chat ON subscriptions(chat_id);

        CREATE TABLE papers (
            arxiv_id         TEXT PRIMARY KEY,            -- base id, no version
            latest_version   INTEGER NOT NULL,
            title            TEXT NOT NULL,
            authors          TEXT NOT NULL,               -- JSON list
            abstract         TEXT NOT NULL,
            categories       TEXT NOT NULL,               -- JSON list, primary first
            primary_category TEXT,
            comment          TEXT,
            journal_ref      TEXT,
            doi              TEXT,
            license          TEXT,
            published        REAL,
            updated          REAL,
            first_seen_at    REAL NOT NULL,
            last_changed_at  REAL NOT NULL,
            -- 0 for a paper known only from an API look-up (/paper): the feed announcing it
            -- later must still count it as new, or its subscribers would never hear of it.
            from_feed        INTEGER NOT NULL DEFAULT 1
        );
        CREATE INDEX papers_first_seen ON papers(first_seen_at);

        -- One row per version the bot has seen, so revision diffs can show what changed.
        CREATE TABLE paper_versions (
            arxiv_id      TEXT NOT NULL REFERENCES papers(arxiv_id) ON DELETE CASCADE,
            version       INTEGER NOT NULL,
            title         TEXT NOT NULL,
            authors       TEXT NOT NULL,
            abstract      TEXT NOT NULL,
            categories    TEXT NOT NULL,
            comment       TEXT,
            journal_ref   TEXT,
            doi           TEXT,
            announce_type TEXT,
            updated       REAL,
            seen_at       REAL NOT NULL,
            PRIMARY KEY (arxiv_id, version)
        );
        CREATE INDEX paper_versions_seen ON paper_versions(seen_at);

        -- Every alert is stored here before it is sent: the unique key makes each paper
        -- version reach each chat at most once, across restarts and crashes.
        CREATE TABLE outbox (
            id               INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id          INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                           ON UPDATE CASCADE,
            arxiv_id         TEXT NOT NULL,
            version          INTEGER NOT NULL,
            kind             TEXT NOT NULL CHECK (kind IN ('new', 'revision')),
            subscription_ids TEXT NOT NULL DEFAULT '[]',  -- JSON list
            matched_queries  TEXT NOT NULL DEFAULT '[]',  -- JSON list, kept if a sub is removed
            saved_revision   INTEGER NOT NULL DEFAULT 0,  -- announced because the chat saved it
            poll_id          INTEGER,
            status           TEXT NOT NULL DEFAULT 'pending'
                             CHECK (status IN ('pending', 'sent', 'failed', 'held')),
            created_at       REAL NOT NULL,
            due_at           REAL NOT NULL,
            attempts         INTEGER NOT NULL DEFAULT 0,
            last_error       TEXT,
            message_id       INTEGER,
            digest_id        INTEGER,
            sent_at          REAL,
            UNIQUE (chat_id, arxiv_id, version)
        );
        CREATE INDEX outbox_due ON outbox(status, due_at);
        CREATE INDEX outbox_message ON outbox(chat_id, message_id);
        CREATE INDEX outbox_created ON outbox(created_at);

        CREATE TABLE saved (
            chat_id       INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                        ON UPDATE CASCADE,
            arxiv_id      TEXT NOT NULL REFERENCES papers(arxiv_id),
            saved_version INTEGER NOT NULL,
            saved_at      REAL NOT NULL,
            PRIMARY KEY (chat_id, arxiv_id)
        );
        CREATE INDEX saved_paper ON saved(arxiv_id);

        -- Digest messages, so "save #n" buttons can name an entry compactly.
        CREATE TABLE digests (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id    INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                     ON UPDATE CASCADE,
            entries    TEXT NOT NULL,                     -- JSON list of "id" strings, by number
            created_at REAL NOT NULL
        );

        CREATE TABLE sources (
            url                  TEXT PRIMARY KEY,
            etag                 TEXT,
            last_modified        TEXT,
            last_attempt_at      REAL,
            last_success_at      REAL,
            consecutive_failures INTEGER NOT NULL DEFAULT 0,
            last_error           TEXT,
            last_status          INTEGER,
            last_items           INTEGER
        );

        CREATE TABLE polls (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            started_at  REAL NOT NULL,
            finished_at REAL,
            new         INTEGER NOT NULL DEFAULT 0,
            revised     INTEGER NOT NULL DEFAULT 0,
            seen        INTEGER NOT NULL DEFAULT 0,
            matches     INTEGER NOT NULL DEFAULT 0,
            error       TEXT
        );
        """,
    ),
    (
        2,
        "drop what nothing uses: the digests and polls tables, outbox.poll_id",
        """
        DROP TABLE digests;
        DROP TABLE polls;
        ALTER TABLE outbox DROP COLUMN poll_id;
        """,
    ),
    (
        3,
        "author names without affiliations; subscriptions shown as typed",
        _reclean_authors_and_keep_queries_as_typed,
    ),
    (
        4,
        "sources: freshness against arXiv's calendar",
        """
        -- The announcement date last seen (ISO date), a digest of the (id, version) pairs of
        -- the feed's content when it last moved, its newest id and when that was; the source's
        -- freshness, since when it is stale and which date was due; listing-page fills.
        ALTER TABLE sources ADD COLUMN announced_on TEXT;
        ALTER TABLE sources ADD COLUMN feed_digest TEXT;
        ALTER TABLE sources ADD COLUMN newest_id TEXT;
        ALTER TABLE sources ADD COLUMN changed_at REAL;
        ALTER TABLE sources ADD COLUMN freshness TEXT;
        ALTER TABLE sources ADD COLUMN stale_since REAL;
        ALTER TABLE sources ADD COLUMN expected_on TEXT;
        ALTER TABLE sources ADD COLUMN filled_on TEXT;
        ALTER TABLE sources ADD COLUMN listing_checked_at REAL;
        ALTER TABLE sources ADD COLUMN listing_error TEXT;
        """,
    ),
    (
        5,
        "heartbeats: the last success at arXiv and Telegram, for health checks",
        """
        CREATE TABLE heartbeats (
            name TEXT PRIMARY KEY,                        -- 'arxiv_poll' | 'telegram'
            at   REAL NOT NULL
        );
        """,
    ),
    (
        6,
        "outbox rows are claimed before their request ('sending', claimed_at) and held ones "
        "expire ('expired')",
        """
        -- SQLite cannot change a CHECK constraint in place: rebuild the table (its documented
        -- 12-step way; nothing references outbox, so no foreign key needs care).
        CREATE TABLE outbox_new (
            id               INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id          INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                           ON UPDATE CASCADE,
            arxiv_id         TEXT NOT NULL,
            version          INTEGER NOT NULL,
            kind             TEXT NOT NULL CHECK (kind IN ('new', 'revision')),
            subscription_ids TEXT NOT NULL DEFAULT '[]',
            matched_queries  TEXT NOT NULL DEFAULT '[]',
            saved_revision   INTEGER NOT NULL DEFAULT 0,
            status           TEXT NOT NULL DEFAULT 'pending'
                             CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'held',
                                               'expired')),
            created_at       REAL NOT NULL,
            due_at           REAL NOT NULL,
            attempts         INTEGER NOT NULL DEFAULT 0,
            last_error       TEXT,
            message_id       INTEGER,
            digest_id        INTEGER,
            sent_at          REAL,
            claimed_at       REAL,                        -- when its request was about to go
            UNIQUE (chat_id, arxiv_id, version)
        );
        INSERT INTO outbox_new (id, chat_id, arxiv_id, version, kind, subscription_ids,
                                matched_queries, saved_revision, status, created_at,
                                due_at, attempts, last_error, message_id, digest_id, sent_at)
            SELECT id, chat_id, arxiv_id, version, kind, subscription_ids, matched_queries,
                   saved_revision, status, created_at, due_at, attempts, last_error,
                   message_id, digest_id, sent_at
            FROM outbox;
        DROP TABLE outbox;
        ALTER TABLE outbox_new RENAME TO outbox;
        CREATE INDEX outbox_due ON outbox(status, due_at);
        CREATE INDEX outbox_message ON outbox(chat_id, message_id);
        CREATE INDEX outbox_created ON outbox(created_at);
        """,
    ),
    (
        7,
        "AI reading guides and Hugging Face community picks",
        """
        -- One guide per paper version and language: a second press anywhere costs no call.
        CREATE TABLE guides (
            arxiv_id   TEXT NOT NULL,
            version    INTEGER NOT NULL,
            language   TEXT NOT NULL,
            text       TEXT NOT NULL,
            model      TEXT NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (arxiv_id, version, language)
        );
        CREATE INDEX guides_created ON guides(created_at);

        -- Every request to the guide endpoint, for the per-chat and global daily budgets.
        CREATE TABLE guide_calls (
            id        INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id   INTEGER NOT NULL,
            called_at REAL NOT NULL,
            ok        INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX guide_calls_chat ON guide_calls(chat_id, called_at);
        CREATE INDEX guide_calls_time ON guide_calls(called_at);

        -- Papers on Hugging Face's daily list, with the community's signals.
        CREATE TABLE community_picks (
            arxiv_id      TEXT PRIMARY KEY,
            listed_on     TEXT NOT NULL,               -- 'YYYY-MM-DD', the list's day
            title         TEXT NOT NULL DEFAULT '',
            upvotes       INTEGER NOT NULL DEFAULT 0,
            comments      INTEGER NOT NULL DEFAULT 0,
            github_repo   TEXT,
            github_stars  INTEGER,
            project_page  TEXT,
            first_seen_at REAL NOT NULL,
            updated_at    REAL NOT NULL
        );
        CREATE INDEX community_picks_day ON community_picks(listed_on, upvotes);
        CREATE INDEX community_picks_seen ON community_picks(first_seen_at);
        """,
    ),
    (
        8,
        "feedback: each chat's 👍/👎 on papers, with its time",
        """
        -- The current label of a paper for a chat; clearing a label deletes its row. A save
        -- is a positive on its own (the `saved` table); 👎 never removes a saved paper.
        CREATE TABLE feedback (
            chat_id     INTEGER NOT NULL,
            arxiv_id    TEXT NOT NULL,                   -- base id: labels are per paper
            label       TEXT NOT NULL CHECK (label IN ('more', 'less')),
            labelled_at REAL NOT NULL,
            PRIMARY KEY (chat_id, arxiv_id)
        );
        """,
    ),
    (
        9,
        "ranking: the fitted tf-idf vocabulary and each chat's model",
        """
        -- One vocabulary at a time (terms and idf as JSON); a model names the fingerprints of
        -- the vocabulary and labels it was trained on, so a restart retrains nothing current.
        CREATE TABLE ranking_vocabulary (
            id          INTEGER PRIMARY KEY CHECK (id = 1),
            fingerprint TEXT NOT NULL,
            terms       BLOB NOT NULL,
            papers      INTEGER NOT NULL,                -- how many papers it was fitted on
            fitted_at   REAL NOT NULL
        );
        CREATE TABLE chat_models (
            chat_id     INTEGER PRIMARY KEY,
            vocabulary  TEXT NOT NULL,
            labels      TEXT NOT NULL,
            weights     BLOB NOT NULL,                   -- numpy npz of a sparse row
            trained_at  REAL NOT NULL
        );
        """,
    ),
    (
        10,
        "for you: chats that get a daily message of papers their subscriptions missed",
        """
        -- A row means "on": up to `count` papers a day, the first due at the chat's digest
        -- time (or the default hour) after `enabled_at`.
        CREATE TABLE foryou (
            chat_id      INTEGER PRIMARY KEY,
            count        INTEGER NOT NULL CHECK (count BETWEEN 1 AND 20),
            enabled_at   REAL NOT NULL,
            last_sent_at REAL
        );
        """,
    ),
    (
        11,
        "a group's library: who saved each paper first",
        """
        -- Set in groups only, and only the first name is kept: it is shown beside the paper.
        -- It goes with the save (removed, the name is gone), and is refreshed when the member
        -- next writes in the group. Saves made before this migration have no saver (NULL).
        ALTER TABLE saved ADD COLUMN saved_by INTEGER;
        ALTER TABLE saved ADD COLUMN saved_by_name TEXT;
        CREATE INDEX saved_saver ON saved(chat_id, saved_by);
        """,
    ),
    (
        12,
        "alert threads: the message that first carried each paper, so revisions reply to it",
        """
        -- Per chat and forum topic (0: General, or a chat without topics), the first message
        -- that showed a paper on its own (not in a digest). A revision is sent as a reply to
        -- it. Kept apart from the outbox, whose rows go after 30 days: revisions come later.
        CREATE TABLE alert_threads (
            chat_id    INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                     ON UPDATE CASCADE,
            topic_id   INTEGER NOT NULL DEFAULT 0,
            arxiv_id   TEXT NOT NULL,
            message_id INTEGER NOT NULL,
            sent_at    REAL NOT NULL,
            PRIMARY KEY (chat_id, topic_id, arxiv_id)
        );
        CREATE INDEX alert_threads_sent ON alert_threads(sent_at);
        -- The alerts still in the outbox that went on their own (no other row shares their
        -- message), oldest first: the first one of each paper starts its thread.
        INSERT OR IGNORE INTO alert_threads (chat_id, topic_id, arxiv_id, message_id, sent_at)
            SELECT o.chat_id, 0, o.arxiv_id, o.message_id, COALESCE(o.sent_at, o.created_at)
            FROM outbox o
            WHERE o.status = 'sent' AND o.message_id IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM outbox d WHERE d.chat_id = o.chat_id
                              AND d.message_id = o.message_id AND d.id != o.id)
            ORDER BY o.id;
        """,
    ),
    (
        13,
        "forum topics: a subscription's topic, topic names, and one alert per topic",
        """
        -- Where a subscription's alerts go in a forum: its topic's message_thread_id, 0 for
        -- General (and for every chat without topics).
        ALTER TABLE subscriptions ADD COLUMN topic_id INTEGER NOT NULL DEFAULT 0;

        -- Topic names as the service messages told them (forum_topic_created / _edited).
        CREATE TABLE topics (
            chat_id  INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE ON UPDATE CASCADE,
            topic_id INTEGER NOT NULL,
            name     TEXT NOT NULL,
            PRIMARY KEY (chat_id, topic_id)
        );

        -- An alert per topic: the unique key gains the topic, so a paper version reaches each
        -- topic of a chat at most once. SQLite cannot change a UNIQUE constraint in place:
        -- rebuild the table, as migration 6 did.
        CREATE TABLE outbox_new (
            id               INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id          INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                           ON UPDATE CASCADE,
            topic_id         INTEGER NOT NULL DEFAULT 0,
            arxiv_id         TEXT NOT NULL,
            version          INTEGER NOT NULL,
            kind             TEXT NOT NULL CHECK (kind IN ('new', 'revision')),
            subscription_ids TEXT NOT NULL DEFAULT '[]',
            matched_queries  TEXT NOT NULL DEFAULT '[]',
            saved_revision   INTEGER NOT NULL DEFAULT 0,
            status           TEXT NOT NULL DEFAULT 'pending'
                             CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'held',
                                               'expired')),
            created_at       REAL NOT NULL,
            due_at           REAL NOT NULL,
            attempts         INTEGER NOT NULL DEFAULT 0,
            last_error       TEXT,
            message_id       INTEGER,
            digest_id        INTEGER,
            sent_at          REAL,
            claimed_at       REAL,
            UNIQUE (chat_id, topic_id, arxiv_id, version)
        );
        INSERT INTO outbox_new (id, chat_id, arxiv_id, version, kind, subscription_ids,
                                matched_queries, saved_revision, status, created_at, due_at,
                                attempts, last_error, message_id, digest_id, sent_at,
                                claimed_at)
            SELECT id, chat_id, arxiv_id, version, kind, subscription_ids, matched_queries,
                   saved_revision, status, created_at, due_at, attempts, last_error,
                   message_id, digest_id, sent_at, claimed_at
            FROM outbox;
        DROP TABLE outbox;
        ALTER TABLE outbox_new RENAME TO outbox;
        CREATE INDEX outbox_due ON outbox(status, due_at);
        CREATE INDEX outbox_message ON outbox(chat_id, message_id);
        CREATE INDEX outbox_created ON outbox(created_at);
        """,
    ),
    (
        14,
        "outbox_message indexes only rows with a message: an alert is stored without one",
        """
        -- A poll stores hundreds of thousands of alerts, none sent yet; each entry of a
        -- (chat_id, message_id) index lands at a random place (chats are spread), a page
        -- written per alert. Only sent rows are ever looked up by their message.
        DROP INDEX outbox_message;
        CREATE INDEX outbox_message ON outbox(chat_id, message_id)
            WHERE message_id IS NOT NULL;
        """,
    ),
    (
        15,
        "for you through an outbox: one queued message per chat and day, with its picks",
        """
        -- The forum topic For you goes to: where /foryou was sent (0: General, or no topics).
        ALTER TABLE foryou ADD COLUMN topic_id INTEGER NOT NULL DEFAULT 0;

        -- A day's For-you message, queued in the transaction that marks the day: the ranker's
        -- picks of that round (JSON: arxiv_id, version and the reason of each), rendered when
        -- it is sent, and delivered as alerts are (claimed, paced, retried, held).
        CREATE TABLE foryou_outbox (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id     INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                      ON UPDATE CASCADE,
            topic_id    INTEGER NOT NULL DEFAULT 0,
            day         TEXT NOT NULL,                   -- the chat's local date, YYYY-MM-DD
            picks       TEXT NOT NULL,
            status      TEXT NOT NULL DEFAULT 'pending'
                        CHECK (status IN ('pending', 'sending', 'sent', 'failed', 'held',
                                          'expired')),
            created_at  REAL NOT NULL,
            due_at      REAL NOT NULL,
            attempts    INTEGER NOT NULL DEFAULT 0,
            last_error  TEXT,
            message_id  INTEGER,
            sent_at     REAL,
            claimed_at  REAL,
            UNIQUE (chat_id, day)
        );
        CREATE INDEX foryou_outbox_due ON foryou_outbox(status, due_at);
        CREATE INDEX foryou_outbox_created ON foryou_outbox(created_at);
        """,
    ),
    (
        16,
        "integrity checks: the last quick_check of the upkeep (or the start), for health",
        """
        CREATE TABLE integrity_checks (
            name     TEXT PRIMARY KEY,                    -- 'quick_check'
            at       REAL NOT NULL,
            problem  TEXT                                 -- NULL: every page sound
        );
        """,
    ),
    (
        17,
        "a full-text index of the papers' titles, authors and abstracts, for inline search",
        """
        -- FTS5 rows are found by an integer id. papers' own rowid may change in a VACUUM (its
        -- key is text), so each paper gets an id of its own here, which VACUUM keeps.
        CREATE TABLE paper_text_ids (
            id       INTEGER PRIMARY KEY,
            arxiv_id TEXT NOT NULL UNIQUE
        );
        -- Contentless: the words are indexed, the text stays in papers alone (no second copy
        -- of every abstract). Deleting an entry names its old text, which the triggers have.
        -- Authors are a JSON list, escaped: json_each gives the names as they are written.
        -- prefix: the last word is searched as a prefix on every keystroke; an index of the
        -- first 2 and 3 letters spares scanning every word that starts so.
        CREATE VIRTUAL TABLE paper_text USING fts5(
            title, authors, abstract, content='', prefix='2 3',
            tokenize='unicode61 remove_diacritics 2'
        );
        INSERT INTO paper_text_ids (arxiv_id) SELECT arxiv_id FROM papers;
        INSERT INTO paper_text (rowid, title, authors, abstract)
            SELECT i.id, p.title, (SELECT group_concat(value, ' ') FROM json_each(p.authors)),
                   p.abstract
            FROM papers p JOIN paper_text_ids i USING (arxiv_id);

        CREATE TRIGGER paper_text_insert AFTER INSERT ON papers BEGIN
            INSERT OR IGNORE INTO paper_text_ids (arxiv_id) VALUES (new.arxiv_id);
            INSERT INTO paper_text (rowid, title, authors, abstract)
                SELECT id, new.title, (SELECT group_concat(value, ' ') FROM json_each(new.authors)),
                       new.abstract
                FROM paper_text_ids WHERE arxiv_id = new.arxiv_id;
        END;
        -- The ingest writes every stored paper again with each feed: only a changed text
        -- costs index work.
        CREATE TRIGGER paper_text_update AFTER UPDATE OF title, authors, abstract ON papers
        WHEN old.title IS NOT new.title OR old.authors IS NOT new.authors
             OR old.abstract IS NOT new.abstract
        BEGIN
            INSERT INTO paper_text (paper_text, rowid, title, authors, abstract)
                SELECT 'delete', id, old.title,
                       (SELECT group_concat(value, ' ') FROM json_each(old.authors)), old.abstract
                FROM paper_text_ids WHERE arxiv_id = old.arxiv_id;
            INSERT INTO paper_text (rowid, title, authors, abstract)
                SELECT id, new.title, (SELECT group_concat(value, ' ') FROM json_each(new.authors)),
                       new.abstract
                FROM paper_text_ids WHERE arxiv_id = new.arxiv_id;
        END;
        CREATE TRIGGER paper_text_delete AFTER DELETE ON papers BEGIN
            INSERT INTO paper_text (paper_text, rowid, title, authors, abstract)
                SELECT 'delete', id, old.title,
                       (SELECT group_concat(value, ' ') FROM json_each(old.authors)), old.abstract
                FROM paper_text_ids WHERE arxiv_id = old.arxiv_id;
            DELETE FROM paper_text_ids WHERE arxiv_id = old.arxiv_id;
        END;
        """,
    ),
    (
        18,
        "a chat may leave the 👍 / 👎 buttons out of its alerts once it rates by reaction",
        """
        ALTER TABLE chats ADD COLUMN rating_buttons INTEGER NOT NULL DEFAULT 1;
        """,
    ),
    (
        19,
        "paid broadcasts: the messages reserved of each UTC day's Stars budget",
        """
        CREATE TABLE paid_broadcasts (
            day      TEXT PRIMARY KEY,                 -- the UTC date, YYYY-MM-DD
            messages INTEGER NOT NULL DEFAULT 0        -- reserved for allow_paid_broadcast
        );
        """,
    ),
    (
        20,
        "a chat's link to a Zotero library, and which of its papers are which Zotero items",
        """
        -- One linked library per chat. The API key is sealed (bot/core/sealing.py): the
        -- database never holds it in the clear. library_version: the library's version as
        -- last read, for If-Modified-Since-Version (0: never read).
        CREATE TABLE zotero_links (
            chat_id          INTEGER PRIMARY KEY REFERENCES chats(id) ON DELETE CASCADE
                                                              ON UPDATE CASCADE,
            library_type     TEXT NOT NULL CHECK (library_type IN ('user', 'group')),
            library_id       INTEGER NOT NULL,
            sealed_key       TEXT NOT NULL,
            can_write        INTEGER NOT NULL DEFAULT 1,
            collection_key   TEXT,                         -- "arXiv alerts", once created
            library_version  INTEGER NOT NULL DEFAULT 0,
            linked_at        REAL NOT NULL,
            pulled_at        REAL
        );
        -- A paper of the chat's library and its Zotero item. origin: 'zotero' (it came from
        -- Zotero: removed here when removed there), 'bot' (saved here and written there),
        -- 'both' (in both before the link: removed in neither). item_key NULL: to be written,
        -- with write_token (Zotero-Write-Token) so a retried write is never made twice.
        CREATE TABLE zotero_items (
            chat_id        INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                            ON UPDATE CASCADE,
            arxiv_id       TEXT NOT NULL,
            origin         TEXT NOT NULL CHECK (origin IN ('zotero', 'bot', 'both')),
            item_key       TEXT,
            item_version   INTEGER,
            paper_version  INTEGER,
            write_token    TEXT,
            PRIMARY KEY (chat_id, arxiv_id)
        );
        CREATE INDEX zotero_items_key ON zotero_items(chat_id, item_key);
        """,
    ),
    (
        21,
        "the bot's messages that show one paper's card, so that a reaction on one rates it",
        """
        -- /paper's cards (and a pasted link's): alerts are found in the outbox, cards here.
        CREATE TABLE card_messages (
            chat_id    INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                        ON UPDATE CASCADE,
            message_id INTEGER NOT NULL,
            arxiv_id   TEXT NOT NULL,
            version    INTEGER NOT NULL,
            sent_at    REAL NOT NULL,
            PRIMARY KEY (chat_id, message_id)
        );
        CREATE INDEX card_messages_sent ON card_messages(sent_at);
        """,
    ),
    (
        22,
        "the chats that blocked the bot are found by an index, not a scan of every chat",
        """
        -- Each transaction of a poll's store reads them (its alerts skip those chats): a big
        -- poll has a thousand transactions, and a scan of 10,000 chats each was 1.4 s of its
        -- store; at 100,000 chats it would be a minute and a half. Few chats block the bot,
        -- so the index is small.
        CREATE INDEX chats_inactive ON chats(id) WHERE inactive_since IS NOT NULL;
        """,
    ),
    (
        23,
        "a poll's plain alerts are staged one row per chat and transaction, not one per alert",
        """
        -- A big poll stored 516,668 outbox rows, each through the outbox's unique key and
        -- three indexes, a page of the chat-ordered key rewritten per chat and commit: 47 s
        -- of a 10 s aim (docs/performance.md, "The store"). Staged here instead, a chat's
        -- alerts of a transaction are one row (`alerts`: JSON columns, see
        -- bot/storage/sqlite/outbox.py), unpacked into outbox rows before the chat's outbox
        -- is read.
        CREATE TABLE outbox_staged (
            id          INTEGER PRIMARY KEY,
            chat_id     INTEGER NOT NULL REFERENCES chats(id) ON DELETE CASCADE
                                                         ON UPDATE CASCADE,
            created_at  REAL NOT NULL,
            alert_count INTEGER NOT NULL,
            alerts      TEXT NOT NULL
        );
        CREATE INDEX outbox_staged_chat ON outbox_staged(chat_id);
        """,
    ),
)

LATEST_VERSION = MIGRATIONS[-1][0]
