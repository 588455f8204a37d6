"""The `redis+cluster://` store URL: the nodes it names, and the mistakes refused with the form that works."""

from __future__ import annotations

import pytest

from stratus.settings import Settings, SettingsError
from stratus.stores.urls import ClusterUrl, StoreConfigError, cluster_url, validate_store_url


def test_a_cluster_url_names_its_nodes_and_keeps_credentials_tls_and_options_for_each() -> None:
    url = "rediss+cluster://app:s%40cret@10.0.0.1:7000,10.0.0.2,[::1]:7002/0?max_connections=20"
    assert validate_store_url(url) == "rediss+cluster"
    assert cluster_url(url) == ClusterUrl(
        "rediss://app:s%40cret@10.0.0.1:7000?max_connections=20",
        (("10.0.0.1", 7000), ("10.0.0.2", 6379), ("::1", 7002)),
    )
    assert cluster_url("redis+cluster://cache.example.com") == ClusterUrl(
        "redis://cache.example.com", (("cache.example.com", 6379),)
    )


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+cluster://", "each cluster node needs HOST or HOST:PORT"),
        ("redis+cluster://10.0.0.1:7000,,10.0.0.2:7000", "each cluster node needs HOST or HOST:PORT"),
        ("redis+cluster://10.0.0.1:port", "each cluster node needs HOST or HOST:PORT"),
        ("redis+cluster://10.0.0.1:7000/1", "database 0 only"),
    ],
)
def test_a_malformed_cluster_url_is_refused_saying_what_works(url: str, says: str) -> None:
    with pytest.raises(StoreConfigError, match=says):
        validate_store_url(url)


def test_a_cluster_is_a_shared_store_so_it_needs_the_shared_secret() -> None:
    url = "redis+cluster://10.0.0.1:7000,10.0.0.2:7000"
    with pytest.raises(SettingsError, match="STRATUS_SECRET_KEY must be set"):
        Settings.from_env({"STRATUS_STORE": url})
    assert Settings.from_env({"STRATUS_STORE": url, "STRATUS_SECRET_KEY": "k"}).store == url
    with pytest.raises(SettingsError, match="redis\\+cluster://HOST:PORT"):
        Settings.from_env({"STRATUS_STORE": "rediscluster://10.0.0.1", "STRATUS_SECRET_KEY": "k"})
