"""The cache of unit results (gpu_async_lsp/ide/cache.py): bounded by what is open.

Live entries (results an analysis holds) are kept as long as they are held, recent ones up to
the byte budget; what neither keeps is freed by reference counting, also after gc.freeze().
"""

from __future__ import annotations

import gc
import weakref

from benchmarks.gen_host import generate
from gpu_async_lsp.ide.cache import UnitCache, estimated_cost
from gpu_async_lsp.ide.host import Analyzer


class Result:
    """A stand-in for a unit result (anything that can be weakly referenced)."""


def key(text: str):
    return (text, "func", False, (False,))


def test_unit_cache_live_entry_kept_while_held_then_dropped():
    cache = UnitCache(budget=0)  # nothing is kept for reuse: only what is held
    held = Result()
    cache.put(key("a"), held)
    assert cache.get(key("a")) is held
    assert cache.statistics().live == 1 and cache.statistics().recent == 0
    del held
    assert cache.get(key("a")) is None
    assert cache.statistics().live == 0


def test_unit_cache_recent_entries_stay_within_the_budget_least_recent_out():
    texts = [c * 1000 for c in "abcdef"]
    cost = estimated_cost(texts[0])
    cache = UnitCache(budget=3 * cost)
    for t in texts[:3]:
        cache.put(key(t), Result())
    assert cache.get(key(texts[0])) is not None  # a, now the most recent
    cache.put(key(texts[3]), Result())  # b goes out
    stats = cache.statistics()
    assert stats.recent == 3 and stats.recent_bytes == 3 * cost and stats.evictions == 1
    assert cache.get(key(texts[1])) is None
    assert all(cache.get(key(t)) is not None for t in (texts[0], texts[2], texts[3]))


def test_unit_cache_unit_bigger_than_the_budget_is_only_live():
    cache = UnitCache(budget=estimated_cost("x" * 10))
    held = Result()
    cache.put(key("y" * 100), held)
    assert cache.statistics().recent == 0
    assert cache.get(key("y" * 100)) is held


def test_unit_cache_hit_on_a_live_entry_makes_it_recent_again():
    cache = UnitCache()
    held = Result()
    cache.put(key("a"), held)
    cache.clear_recent()
    assert cache.statistics().recent == 0
    assert cache.get(key("a")) is held
    assert cache.statistics().recent == 1
    assert cache.statistics().hits == 1


def test_unit_cache_analyses_of_many_versions_keep_only_the_budget():
    """Typing in one function: each version's unit result is a new entry; those no
    analysis holds stay within the budget."""
    text = generate(2000, seed=5)
    cache = UnitCache(budget=1 << 20)
    analyzer = Analyzer(cache=cache)
    a = analyzer.analyze(text, 0)
    at = text.index("gpu.memcpy", len(text) // 2)
    for i in range(30):
        text = text[:at] + " " + text[at:]
        a = analyzer.analyze(text, i + 1, a)
    stats = cache.statistics()
    assert stats.recent_bytes <= stats.budget
    # Alive: the current version's units and the recent ones, no others.
    assert stats.live <= len(a.units) + stats.recent, stats


def test_unit_cache_frozen_results_are_freed_when_let_go():
    """The server freezes big analyses out of the collector's sight (gc.freeze). What the
    cache and the documents let go must still be freed, by reference counting."""
    text = generate(400, seed=7)
    cache = UnitCache(budget=0)
    a = Analyzer(cache=cache).analyze(text, 1)
    refs = [weakref.ref(u.result) for u in a.units]
    gc.freeze()
    try:
        del a
        assert all(r() is None for r in refs)
        assert cache.statistics().live == 0
    finally:
        gc.unfreeze()


def test_unit_cache_shared_by_analyzers_of_other_settings_keeps_them_apart():
    text = generate(200, seed=2)
    cache = UnitCache()
    lenient = Analyzer(cache=cache).analyze(text, 1)
    strict = Analyzer(strict=True, cache=cache).analyze(text, 1)
    assert all(x.result is not y.result for x, y in zip(lenient.units, strict.units))
    again = Analyzer(cache=cache).analyze(text, 2)
    assert all(x.result is y.result for x, y in zip(lenient.units, again.units))


def test_unit_cache_references_of_dead_results_do_not_pile_up():
    """A long session puts result after result that no analysis holds for long: the weak
    references the cache keeps of them stay within twice what is alive (and a floor)."""
    from gpu_async_lsp.ide.cache import SWEEP_FLOOR

    cache = UnitCache(budget=0)  # nothing recent: only what is held lives
    held = [Result() for _ in range(100)]
    for i, r in enumerate(held):
        cache.put(key(f"held {i}"), r)
    for i in range(20 * SWEEP_FLOOR):
        cache.put(key(f"gone {i}"), Result())  # freed at once
        assert len(cache._live) <= max(SWEEP_FLOOR, 2 * len(held)) + 1
    assert cache.statistics().live == len(held)
    assert all(cache.get(key(f"held {i}")) is r for i, r in enumerate(held))
