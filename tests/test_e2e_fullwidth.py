"""Queries typed with a Chinese input method: full-width symbols mean their ASCII forms.

A Chinese IME types `－`, `：`, `（）`, `＂` and the ideographic space by default. Before input
was normalised, `cs.LG －survey` meant "cs.LG AND survey", the opposite of what was typed.
"""

from __future__ import annotations

from bot.core.models import Paper
from tests.conftest import Harness, make_paper

ZH = {"language_code": "zh-hans"}


async def delivered_ids(harness: Harness, chat_id: int, papers: list[Paper]) -> set[str]:
    """The arXiv ids of the alerts a chat receives from one poll serving `papers`."""
    before = len(harness.tg.messages(chat_id))
    harness.serve_feed(papers)
    await harness.poll()
    await harness.drain()
    return {paper.arxiv_id for paper in papers
            for message in harness.tg.messages(chat_id)[before:]
            if f"arXiv:{paper.versioned_id}" in message.text}


async def test_a_full_width_minus_excludes_surveys(harness: Harness) -> None:
    chat = 9101
    reply = await harness.ask(chat, "/follow cs.LG －survey", **ZH)
    assert "cs.LG -survey" in reply.text, "shown as typed, in ASCII"
    [sub] = await harness.services.storage.subscriptions.for_chat(chat)
    assert sub.query == "cat:cs.LG NOT survey"
    survey = make_paper(1, title="A survey of sparse attention")
    study = make_paper(2, title="Sparse attention with a learned router")
    assert await delivered_ids(harness, chat, [survey, study]) == {study.arxiv_id}


async def test_a_full_width_colon_follows_the_author(harness: Harness) -> None:
    chat = 9102
    reply = await harness.ask(chat, "/follow au：Yoneki", **ZH)
    assert "au:Yoneki" in reply.text
    [sub] = await harness.services.storage.subscriptions.for_chat(chat)
    assert sub.query == "au:yoneki"
    by_her = make_paper(3, authors=("Eiko Yoneki",), categories=("cs.DC",))
    by_others = make_paper(4, authors=("Dirk Wübben",), categories=("cs.DC",),
                           title="Yoneki numbers in distributed consensus")
    assert await delivered_ids(harness, chat, [by_her, by_others]) == {by_her.arxiv_id}


async def test_full_width_parentheses_group(harness: Harness) -> None:
    chat = 9103
    reply = await harness.ask(chat, "/follow cs.CL （RAG OR retrieval）", **ZH)
    assert "cs.CL (RAG OR retrieval)" in reply.text
    [sub] = await harness.services.storage.subscriptions.for_chat(chat)
    assert sub.query == "cat:cs.CL (rag OR retrieval)"
    in_cl = make_paper(5, categories=("cs.CL",), title="Dense retrieval for long documents")
    rag_in_cl = make_paper(6, categories=("cs.CL",), title="RAG for scientific questions")
    other_cl = make_paper(7, categories=("cs.CL",), title="Tokenizers for Uzbek")
    # Without the grouping this would be "(cs.CL AND rag) OR retrieval" and arrive.
    retrieval_in_ir = make_paper(8, categories=("cs.IR",), title="Sparse retrieval at scale")
    got = await delivered_ids(harness, chat, [in_cl, rag_in_cl, other_cl, retrieval_in_ir])
    assert got == {in_cl.arxiv_id, rag_in_cl.arxiv_id}


async def test_an_ideographic_space_separates_terms(harness: Harness) -> None:
    reply = await harness.ask(9104, "/follow cs.LG\u3000＂graph neural＂", **ZH)
    assert 'cs.LG "graph neural"' in reply.text
    [sub] = await harness.services.storage.subscriptions.for_chat(9104)
    assert sub.query == '"graph neural" cat:cs.LG'


async def test_a_cjk_keyword_is_accepted_with_a_note_about_english_abstracts(
        harness: Harness) -> None:
    chinese = await harness.ask(9105, "/follow cs.LG 扩散模型", **ZH)
    assert "✅ 已订阅 #1" in chinese.text and "扩散模型" in chinese.text
    assert "英文" in chinese.text
    english = await harness.ask(9106, "/follow cs.LG 扩散模型")
    assert "Following #1" in english.text and "in English" in english.text
    plain = await harness.ask(9107, "/follow cs.LG diffusion")
    assert "in English" not in plain.text


async def test_every_command_argument_is_normalised_not_only_queries(harness: Harness) -> None:
    reply = await harness.ask(9108, "/digest ０８：３０", **ZH)
    assert "每天 08:30" in reply.text
    record = await harness.services.storage.chats.get(9108)
    assert record is not None and record.digest_time == "08:30"
