"""A noisy chat and a few ordinary ones, as traffic injected into the fake Telegram.

Shared by `bench/abuse.py` (the full size) and `tests/test_e2e_abuse.py` (a small size): one
chat sends `/paper` for ids arXiv does not have and every other command as fast as a script
can, while the quiet chats each send `/help` now and then and one `/paper` for a paper arXiv
has. `figures()` reads what happened from the fakes' records.
"""

from __future__ import annotations

import itertools
import statistics
import time
from dataclasses import dataclass, field, replace

from bot.core.models import Paper
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import synth_papers
from tests.fakes.telegram_server import FakeTelegram

NOISY_CHAT = 8_000_001
QUIET_CHATS = tuple(range(8_000_101, 8_000_111))
NOISY_OTHERS = ("/help", "/start", "/stats", "/list", "/saved", "/follow cs.LG",
                "/export", "/digest", "/tz", "/lang", "/unfollow 1", "/pause", "/resume")
HELP_MARK = "Following papers"  # a line of /help's answer


@dataclass(frozen=True, slots=True)
class Plan:
    """Who sends what within `duration` seconds."""

    duration: float = 10.0
    noisy_papers: int = 50
    noisy_others: int = 200
    quiet_chats: int = 5
    helps_per_chat: int = 5

    def scaled(self, scale: float) -> Plan:
        return Plan(self.duration * scale, round(self.noisy_papers * scale),
                    round(self.noisy_others * scale), self.quiet_chats,
                    max(1, round(self.helps_per_chat * scale)))


@dataclass(frozen=True, slots=True)
class Sent:
    chat_id: int
    command: str
    at: float  # time.time(), the clock of the fake's records


@dataclass(frozen=True, slots=True)
class Figures:
    help_latencies: list[float]  # /help answers not held up by the same chat's own /paper
    behind_own_paper: list[float]  # /help sent while the same chat's /paper still waited
    paper_latencies: list[float]
    unanswered: list[str]
    noisy_sent: int
    noisy_replies: int
    arxiv_requests: int
    arxiv_ids_asked: int
    arxiv_min_spacing: float | None
    # Each /help answered in more than 0.5 s: (latency, how long after the previous message
    # to the same chat it went out, the start of that message): what it waited on.
    slow_helps: list[tuple[float, float, str]] = field(default_factory=list)

    @property
    def help_p50(self) -> float:
        return statistics.median(self.help_latencies)

    @property
    def help_p99(self) -> float:
        return percentile(self.help_latencies, 99)


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


def quiet_papers(plan: Plan) -> list[Paper]:
    """The papers the quiet chats ask for: arXiv (the fake API) has them, the bot does not."""
    return [replace(paper, title=f"Quiet reader's paper number {index}")
            for index, paper in enumerate(synth_papers(plan.quiet_chats, seed=19), start=1)]


def schedule(plan: Plan) -> list[tuple[float, int, str]]:
    """(seconds from the start, chat, command) for everything, in time order."""
    events: list[tuple[float, int, str]] = []
    noisy_total = plan.noisy_papers + plan.noisy_others
    others = itertools.cycle(NOISY_OTHERS)
    every = noisy_total // max(plan.noisy_papers, 1)
    papers = 0
    for index in range(noisy_total):
        at = plan.duration * index / noisy_total
        if papers < plan.noisy_papers and index % every == 0:
            papers += 1
            command = f"/paper 2612.{90000 + index:05d}"  # ids arXiv does not have
        else:
            command = next(others)
        events.append((at, NOISY_CHAT, command))
    for number, (chat, paper) in enumerate(zip(QUIET_CHATS, quiet_papers(plan), strict=False)):
        for k in range(plan.helps_per_chat):
            at = 0.3 + 0.25 * number + k * plan.duration / plan.helps_per_chat
            events.append((min(at, plan.duration), chat, "/help"))
        paper_at = plan.duration * (0.15 + 0.15 * number)
        events.append((paper_at, chat, f"/paper {paper.arxiv_id}"))
    return sorted(events)


def drive(tg: FakeTelegram, plan: Plan) -> list[Sent]:
    """Inject the whole schedule in real time (blocking); returns what was sent, when."""
    started = time.time()
    sent: list[Sent] = []
    for offset, chat, command in schedule(plan):
        delay = started + offset - time.time()
        if delay > 0:
            time.sleep(delay)
        tg.send_command(chat, command, first_name="Noisy" if chat == NOISY_CHAT else "Quiet")
        sent.append(Sent(chat, command, time.time()))
    return sent


def answered(tg: FakeTelegram, sent: list[Sent], plan: Plan) -> bool:
    """Whether every quiet chat's commands have their answers yet."""
    return not figures(tg, None, sent, plan).unanswered


def figures(tg: FakeTelegram, arxiv: FakeArxivServer | None, sent: list[Sent],
            plan: Plan) -> Figures:
    """Latencies of the quiet chats' answers, what the noisy chat got, what arXiv saw."""
    outgoing = [(call.at, int(call.params.get("chat_id", 0)), str(call.params.get("text", "")))
                for method in ("sendMessage", "editMessageText", "sendDocument")
                for call in tg.calls_of(method, ok_only=True)]
    outgoing.sort()
    titles = {f"/paper {paper.arxiv_id}": paper.title for paper in quiet_papers(plan)}
    help_latencies: list[float] = []
    behind_own_paper: list[float] = []
    paper_latencies: list[float] = []
    unanswered: list[str] = []
    slow_helps: list[tuple[float, float, str]] = []
    for chat in QUIET_CHATS[:plan.quiet_chats]:
        # A chat's updates are handled in order: its /paper's span holds up its next /help.
        paper_spans: list[tuple[float, float]] = []
        for command in (s for s in sent if s.chat_id == chat and s.command.startswith("/paper")):
            title = titles[command.command]
            card = next((at for at, to, text in outgoing if to == chat and title in text), None)
            if card is None:
                unanswered.append(f"{chat} {command.command}")
            else:
                paper_latencies.append(card - command.at)
                paper_spans.append((command.at, card))
        helps = [s for s in sent if s.chat_id == chat and s.command == "/help"]
        help_answers = [at for at, to, text in outgoing if to == chat and HELP_MARK in text]
        for index, command in enumerate(helps):
            if index >= len(help_answers):
                unanswered.append(f"{chat} /help #{index + 1}")
                continue
            held = any(start < command.at < end for start, end in paper_spans)
            latency = help_answers[index] - command.at
            (behind_own_paper if held else help_latencies).append(latency)
            before = [(at, text) for at, to, text in outgoing
                      if to == chat and at < help_answers[index]]
            if not held and latency > 0.5 and before:
                slow_helps.append((latency, help_answers[index] - before[-1][0],
                                   before[-1][1][:40]))
    requests = [r for r in arxiv.requests if r.path == "/api/query"] if arxiv else []
    times = [r.time for r in requests]
    return Figures(
        help_latencies=help_latencies,
        behind_own_paper=behind_own_paper,
        paper_latencies=paper_latencies,
        unanswered=unanswered,
        noisy_sent=sum(s.chat_id == NOISY_CHAT for s in sent),
        noisy_replies=sum(1 for method in ("sendMessage", "sendDocument")
                          for call in tg.calls_of(method, ok_only=True)
                          if int(call.params.get("chat_id", 0)) == NOISY_CHAT),
        arxiv_requests=len(requests),
        arxiv_ids_asked=sum(len(r.query["id_list"][0].split(",")) for r in requests),
        arxiv_min_spacing=min((b - a for a, b in itertools.pairwise(times)), default=None),
        slow_helps=slow_helps,
    )
