"""The store URL, read once: what each backend takes from it, and the mistakes refused with the form that works."""

from __future__ import annotations

import pytest

from stratus.settings import Settings, SettingsError
from stratus.stores.urls import StoreConfigError, StoreUrl, parse_store_url
from tests.fixtures.keys import SECRET_KEY


def test_a_cluster_url_names_its_nodes_and_keeps_credentials_tls_and_options_for_each() -> None:
    url = "rediss+cluster://app:s%40cret@10.0.0.1:7000,10.0.0.2,[::1]:7002/0?max_connections=20"
    assert parse_store_url(url) == StoreUrl(
        url,
        "rediss+cluster",
        "redis",
        redis_url="rediss://app:s%40cret@10.0.0.1:7000",
        cluster_nodes=(("10.0.0.1", 7000), ("10.0.0.2", 6379), ("::1", 7002)),
        max_connections=20,
    )
    assert parse_store_url("redis+cluster://cache.example.com").cluster_nodes == (("cache.example.com", 6379),)
    assert parse_store_url("redis+cluster://cache.example.com").redis_url == "redis://cache.example.com"


def test_each_backend_is_read_from_its_url_once() -> None:
    assert parse_store_url("memory://") == StoreUrl("memory://", "memory", "memory")
    assert parse_store_url("dynamodb://stratus-state").table == "stratus-state"
    one = parse_store_url("rediss://:pw@cache.example.com:6380/2?ssl_cert_reqs=none&max_connections=7")
    assert (one.redis_url, one.max_connections, one.cluster) == (
        "rediss://:pw@cache.example.com:6380/2?ssl_cert_reqs=none",
        7,
        False,
    )
    assert [parse_store_url(url).shared for url in ("memory://", "redis://h", "dynamodb://t")] == [False, True, True]


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+cluster://", "each cluster node needs HOST or HOST:PORT"),
        ("redis+cluster://10.0.0.1:7000,,10.0.0.2:7000", "each cluster node needs HOST or HOST:PORT"),
        ("redis+cluster://10.0.0.1:port", "each cluster node needs HOST or HOST:PORT"),
        ("redis+cluster://10.0.0.1:7000/1", "database 0 only"),
        ("redis://127.0.0.1:6379/0?max_connections=many", "max_connections must be a whole number"),
    ],
)
def test_a_malformed_redis_url_is_refused_saying_what_works(url: str, says: str) -> None:
    with pytest.raises(StoreConfigError, match=says):
        parse_store_url(url)


def test_a_cluster_is_a_shared_store_so_it_needs_the_shared_secret() -> None:
    url = "redis+cluster://10.0.0.1:7000,10.0.0.2:7000"
    with pytest.raises(SettingsError, match="STRATUS_SECRET_KEY must be set"):
        Settings.from_env({"STRATUS_STORE": url})
    assert Settings.from_env({"STRATUS_STORE": url, "STRATUS_SECRET_KEY": SECRET_KEY}).store == url
    with pytest.raises(SettingsError, match="redis\\+cluster://HOST:PORT"):
        Settings.from_env({"STRATUS_STORE": "rediscluster://10.0.0.1", "STRATUS_SECRET_KEY": SECRET_KEY})
