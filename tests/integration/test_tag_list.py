"""``RegistryClient.list_tags`` against the real registry, with basic auth too, and every page
of ``GET /v2/<name>/tags/list`` followed through ``Link`` headers.

The Debian registry (distribution 2.8) answers the whole list whatever ``n`` asks; distribution
3 and the OCI distribution spec paginate (``n``, ``last``, ``Link: <...>; rel="next"``). The
pages are cut by a proxy in front of the real registry, from the real registry's answer."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from support import SeededRegistry
from support.fault_proxy import Fault, FaultProxy, Upstream

from kmultiarch.core.policy import RegistrySettings
from kmultiarch.registry.client import RegistryClient
from kmultiarch.registry.credentials import CredentialStore

UPGRADE_TAGS = ["1.0", "1.1", "1.2-alpine", "1.3", "2.0"]


class PaginateTags(Fault):
    """The real tag list, cut into pages as the OCI distribution spec describes: sorted, at
    most ``n`` tags after ``last``, a ``Link`` to the next page while there is one."""

    def respond(self, exchange, upstream: Upstream | None) -> None:  # type: ignore[no-untyped-def]
        assert upstream is not None
        query = parse_qs(urlsplit(exchange.handler.path).query)
        size = int(query.get("n", ["1000"])[0])
        last = query.get("last", [""])[0]
        document = json.loads(upstream.body)
        remaining = [tag for tag in sorted(document["tags"]) if tag > last]
        page = remaining[:size]
        headers = upstream.with_header("Content-Type", "application/json")
        if len(remaining) > size:
            following = urlencode({"n": size, "last": page[-1]})
            headers.append(("Link", f'<{exchange.path}?{following}>; rel="next"'))
        body = json.dumps({"name": document["name"], "tags": page}).encode()
        exchange.send(200, "OK", headers, body)


def list_tags(
    host: str, repository: str, page_size: int, environ: dict[str, str]
) -> tuple[list[str], int]:
    async def run() -> tuple[list[str], int]:
        registries = {host: RegistrySettings(insecure=True)}
        async with RegistryClient(registries, credentials=CredentialStore(environ)) as client:
            (endpoint,) = client.endpoints(host)
            tags = await client.list_tags(
                endpoint, repository, source=f"{host}/{repository}", page_size=page_size
            )
            return tags, client.requests["tags-list"]

    return asyncio.run(run())


def test_every_page_of_the_tag_list_is_followed(registry: SeededRegistry, tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path)}
    whole, requests = list_tags(registry.host, "upgrades/app", 2, environ)
    assert sorted(whole) == UPGRADE_TAGS and requests == 1  # distribution 2.8: one page
    with FaultProxy(registry.url) as proxy:
        proxy.inject("/tags/list", PaginateTags())
        tags, requests = list_tags(proxy.host, "upgrades/app", 2, environ)
        assert tags == UPGRADE_TAGS
        assert requests == 3  # 2 + 2 + 1: each Link header led to the next page
        assert proxy.count(path_contains="/tags/list") == 3


def test_the_tag_list_behind_basic_auth(
    basic_auth_registry: SeededRegistry, docker_config: Callable[[str, str, str], Path]
) -> None:
    assert basic_auth_registry.username and basic_auth_registry.password
    config_dir = docker_config(
        basic_auth_registry.host, basic_auth_registry.username, basic_auth_registry.password
    )
    tags, _ = list_tags(basic_auth_registry.host, "two-tags", 1, {"DOCKER_CONFIG": str(config_dir)})
    assert sorted(tags) == ["1.0", "latest"]
