"""Which feed URLs the bot polls for the archives it ingests and the categories chats follow."""

from __future__ import annotations

import pytest

from bot.arxiv.plan import build_feed_plan
from bot.arxiv.taxonomy import ARCHIVES, archive_of, canonical_name, is_archive

RSS = "https://rss.arxiv.org/rss"


def test_archive_covers_its_categories_and_others_are_added() -> None:
    plan = build_feed_plan(["cs"], {"stat.ML", "cs.LG", "math.AG", "hep-th"}, rss_url=RSS)
    urls = list(plan.urls)

    assert urls == [f"{RSS}/cs+hep-th+math.AG+stat.ML"]


def test_plan_is_deterministic_and_free_of_duplicates() -> None:
    first = build_feed_plan(["cs", "math"], ["math.AG", "cs.LG", "stat.ML", "stat.ML"],
                            rss_url=RSS + "/")
    second = build_feed_plan(["math", "cs"], ["stat.ML", "cs.LG", "math.AG"], rss_url=RSS)

    assert first == second
    assert first.sources == ("cs", "math", "stat.ML")
    assert first.urls == (f"{RSS}/cs+math+stat.ML",)


@pytest.mark.parametrize(("category", "archive"), [
    ("physics.optics", "physics"),
    ("astro-ph.CO", "astro-ph"),
    ("cond-mat.str-el", "cond-mat"),
    ("stat.ML", "stat"),
    ("math-ph", "math-ph"),
    ("hep-th", "hep-th"),
    ("q-bio.NC", "q-bio"),
    ("eess.SY", "eess"),
])
def test_categories_belong_to_their_archive(category: str, archive: str) -> None:
    assert archive_of(category) == archive
    plan = build_feed_plan([archive], [category], rss_url=RSS)
    assert plan.urls == (f"{RSS}/{archive}",)


def test_math_ph_is_its_own_archive_not_part_of_math() -> None:
    assert list(build_feed_plan(["math"], ["math-ph"], rss_url=RSS).urls) == [f"{RSS}/math+math-ph"]
    assert is_archive("math-ph")


def test_user_spelling_is_normalised_to_arxivs() -> None:
    assert canonical_name("CS.lg") == "cs.LG"
    assert canonical_name(" cond-mat.STR-EL ") == "cond-mat.str-el"
    plan = build_feed_plan([], ["cs.lg", "Quant-Ph"], rss_url=RSS)
    assert list(plan.urls) == [f"{RSS}/cs.LG+quant-ph"]


@pytest.mark.parametrize("name", [
    "astroph", "cs.XX", "cs.", "", "cs+math", "cs/../../etc", "cs.LG OR 1=1", "<b>cs</b>",
    "physics.optics/x", "x" * 500, "test",
])
def test_unknown_or_hostile_names_are_refused(name: str) -> None:
    plan = build_feed_plan(["cs"], [name], rss_url=RSS)

    assert plan.urls == (f"{RSS}/cs",)
    assert plan.rejected == (name[:80],)
    assert canonical_name(name) is None


def test_long_plans_are_split_into_urls_under_the_limit() -> None:
    followed = [f"cs.{s}" for s in ("AI", "CL", "CV", "LG")] + [
        f"physics.{s}" for s in ("optics", "flu-dyn", "plasm-ph", "space-ph", "chem-ph")]
    plan = build_feed_plan([], followed, rss_url=RSS, max_url_length=80)

    assert len(plan.urls) > 1
    assert all(len(url) <= 80 for url in plan.urls)
    covered = [name for url in plan.urls for name in url.removeprefix(RSS + "/").split("+")]
    assert covered == list(plan.sources)
    assert sorted(covered) == sorted(followed)


def test_every_archive_at_once_fits_the_default_limit() -> None:
    plan = build_feed_plan(sorted(ARCHIVES), [], rss_url=RSS)

    assert len(ARCHIVES) == 20
    assert len(plan.urls) == 1
    assert len(plan.urls[0]) <= 1000


def test_nothing_to_follow_means_no_feed() -> None:
    assert build_feed_plan([], [], rss_url=RSS).urls == ()


def test_every_category_the_parser_accepts_is_one_the_planner_polls(
        caplog: pytest.LogCaptureFixture) -> None:
    from bot.arxiv.taxonomy import CATEGORIES, SUBSUMED
    from bot.query.parser import parse

    for name in sorted(CATEGORIES | ARCHIVES | set(SUBSUMED)):
        node = parse(f"cat:{name}")
        plan = build_feed_plan([], {node.name}, rss_url=RSS)  # type: ignore[union-attr]
        assert plan.rejected == () and plan.sources == (node.name,), name  # type: ignore[union-attr]
    assert not [r for r in caplog.records if r.levelname == "WARNING"]


def test_a_closed_archive_means_the_category_that_took_it_over() -> None:
    from bot.query.parser import Category, parse

    assert parse("cat:cmp-lg") == Category("cs.CL")
    assert parse("alg-geom") == Category("math.AG")
    assert canonical_name("CMP-LG") == "cs.CL"
    assert build_feed_plan(["cmp-lg"], [], rss_url=RSS).urls == (f"{RSS}/cs.CL",)
