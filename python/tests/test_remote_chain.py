"""`Cache(remote=...)`: one URL (a str) or a chain of tiers, fastest first (a
list), as the CLI's repeated `--remote`. A tier that is down is skipped and
counted; a hit in a later tier back-fills the first (on the real Redis the test
script starts)."""

import pytest

import mlir_cache_key as mck

KEY = "jit_f-" + "ab" * 32
DEAD = "redis://127.0.0.1:1/0"


def record():
    return mck.key_from_parts(b"module bytes", "jit_f", compiler_version="0.12.0.1",
                              platform="cpu", platform_version="cpu",
                              computation_text="module {}\n")["record"]


def tiers(cache):
    return [(t["url"], t["read_only"]) for t in cache.stats()["tiers"]]


def test_a_str_is_one_tier_and_a_list_is_a_chain(tmp_path):
    assert tiers(mck.Cache(tmp_path / "one", remote=DEAD)) == [(DEAD, False)]
    chain = mck.Cache(tmp_path / "two", remote=[DEAD, "redis://127.0.0.1:2/0?read_only=1"])
    assert tiers(chain) == [(DEAD, False), ("redis://127.0.0.1:2/0", True)]
    assert chain.stats()["lease_tier"] == DEAD
    with pytest.raises(TypeError):
        mck.Cache(tmp_path / "bad", remote=5)
    with pytest.raises(ValueError):
        mck.Cache(tmp_path / "bad", remote=[DEAD, "http://nowhere"])


def test_a_dead_tier_is_skipped_and_the_next_back_fills_the_first(tmp_path, redis_url):
    slow = f"{redis_url}/py-chain-{tmp_path.name}-slow"
    fast = f"{redis_url}/py-chain-{tmp_path.name}-fast"
    mck.Cache(tmp_path / "a", remote=slow).put(KEY, b"artefact", record())
    b = mck.Cache(tmp_path / "b", remote=[DEAD, fast, slow])
    assert b.get(KEY) == b"artefact"
    dead, first, second = b.stats()["tiers"]
    assert dead["errors"] >= 1
    assert (first["misses"], first["backfills"]) == (1, 1)
    assert second["hits"] == 1
    c = mck.Cache(tmp_path / "c", remote=[fast, slow])
    assert c.get(KEY) == b"artefact"
    assert [t["hits"] for t in c.stats()["tiers"]] == [1, 0]
