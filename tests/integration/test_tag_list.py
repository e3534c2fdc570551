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

from kmultiarch.core.policy.model import RegistrySettings
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


def _suggest_upgrades_through(
    proxy: FaultProxy,
    tmp_path: Path,
    repositories: tuple[str, ...] = ("upgrades/app",),
    extra_spec: str = "",
) -> tuple[str, list[str]]:
    """The first of the images ``REPOSITORY:1.0`` named through ``proxy``, and the report
    command that asks for their upgrades (JSON) with a policy reaching the proxy over HTTP."""
    from support.manifests import deployment

    references = [f"{proxy.host}/{repository}:1.0" for repository in repositories]
    manifest = tmp_path / "app.yaml"
    manifest.write_text(deployment("old", references))
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nspec:\n"
        f"  registries: {{'{proxy.host}': {{insecure: true}}}}\n{extra_spec}"
    )
    args = ["report", "--suggest-upgrades", "-o", "json", "--config", str(policy), str(manifest)]
    return references[0], args


class EndlessTagPages(Fault):
    """A registry that ignores ``n`` and never ends: each page is ``page_bytes`` of distinct
    version tags newer than 1.0 (just under the 8 MB the old client allowed per page), with a
    ``Link`` to one more page. ``pages`` stops it (for measuring the old client only)."""

    def __init__(self, page_bytes: int = 8_000_000, pages: int | None = None) -> None:
        self.page_bytes = page_bytes
        self.pages = pages

    def respond(self, exchange, upstream: Upstream | None) -> None:  # type: ignore[no-untyped-def]
        assert upstream is not None
        page = int(parse_qs(urlsplit(exchange.handler.path).query).get("page", ["0"])[0])
        tags, size, number = [], 64, 0
        while size < self.page_bytes:
            tag = f"1.{page + 1}.{number}"
            tags.append(tag)
            size += len(tag) + 4
            number += 1
        headers = upstream.with_header("Content-Type", "application/json")
        if self.pages is None or page + 1 < self.pages:
            following = urlencode({"n": 1000, "page": page + 1})
            headers.append(("Link", f'<{exchange.path}?{following}>; rel="next"'))
        body = json.dumps({"name": "upgrades/app", "tags": tags}).encode()
        exchange.send(200, "OK", headers, body)


#: What `report --suggest-upgrades` may hold at its peak, whatever a registry sends: the run
#: itself takes about 60 MB.
TAG_LIST_RSS_BOUND = 150 * 1024 * 1024


def test_a_registry_that_ignores_n_and_never_ends_cannot_grow_memory(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """The caps were per page (8 MB x 50 pages): a registry that ignores ``n`` and sends page
    after page of 8 MB took the run to 943 MB resident after 8 pages. The caps are now on the
    whole list: the suggestion is skipped with a warning naming the image."""
    from support.cli import clean_env
    from support.measure import run_measured

    with FaultProxy(registry.url) as proxy:
        proxy.inject("/tags/list", EndlessTagPages())
        reference, args = _suggest_upgrades_through(proxy, tmp_path)
        run = run_measured(
            args,
            env=clean_env(tmp_path),
            timeout=180,
        )
        pages = proxy.count(path_contains="/tags/list")
    print(f"peak RSS {run.max_rss / 2**20:.0f} MB, {run.elapsed:.1f} s, {pages} page(s)")
    assert run.returncode == 0, run.stderr
    (upgrade,) = json.loads(run.stdout)["upgrades"]
    assert upgrade["image"] == reference and upgrade["tag"] is None
    assert "tag list" in upgrade["note"] and "cap" in upgrade["note"], upgrade["note"]
    warnings = [line for line in run.stderr_lines if "warning" in line and reference in line]
    assert len(warnings) == 1 and "no upgrade suggested" in warnings[0], run.stderr
    assert run.max_rss < TAG_LIST_RSS_BOUND, f"{run.max_rss / 2**20:.0f} MB"
    assert pages <= 2


def test_tags_of_5000_digits_or_other_scripts_digits_are_no_versions(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """A tag of 5 000 digits passed Python's int-string limit: report --suggest-upgrades exited
    3. '1.' and an Arabic-Indic one was taken for a version and suggested, a tag kmultiarch's
    own reference parser refuses. The real list is served with such tags added."""
    from support.cli import clean_env, run_kmultiarch
    from support.fault_proxy import ReplaceBody

    def with_odd_tags(body: bytes) -> bytes:
        document = json.loads(body)
        document["tags"] += ["9" * 5000, "1.0." + "9" * 5000, "1.\u0661", "1.0\uff11", "1.2\n"]
        return json.dumps(document).encode()

    with FaultProxy(registry.url) as proxy:
        proxy.inject("/tags/list", ReplaceBody(with_odd_tags))
        _, args = _suggest_upgrades_through(proxy, tmp_path)
        result = run_kmultiarch(args, env=clean_env(tmp_path))
    assert result.returncode == 0, result.stderr
    (upgrade,) = result.json()["upgrades"]
    assert upgrade["tag"] == "1.3", upgrade


class LongTagList(Fault):
    """Any repository's tag list: one page of 49 000 tags of 128 characters (6.5 MB), within
    every bound of a single list."""

    forward = False

    def __init__(self) -> None:
        tags = [f"1.{number}-" + "a" * (126 - len(str(number))) for number in range(49_000)]
        self.body = json.dumps({"name": "app", "tags": tags}).encode()

    def respond(self, exchange, upstream: Upstream | None) -> None:  # type: ignore[no-untyped-def]
        exchange.send(200, "OK", [("Content-Type", "application/json")], self.body)


def test_the_tag_lists_of_many_repositories_do_not_add_up(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """Every repository's whole tag list was kept until the last one came (32 at once): 32
    images of repositories with 49 000 long tags each took the run to 419 MB, 64 to 766 MB.
    A few lists are fetched at once, and each is cut to its nearest newer tags as it comes."""
    from support.cli import clean_env
    from support.measure import run_measured

    with FaultProxy(registry.url) as proxy:
        proxy.inject("/tags/list", LongTagList())
        _, args = _suggest_upgrades_through(
            proxy,
            tmp_path,
            tuple(f"team{number}/app" for number in range(32)),
            # Platforms declared, not looked up: the images need not exist.
            "  overrides: [{image: '*', platforms: [linux/amd64]}]\n",
        )
        run = run_measured(args, env=clean_env(tmp_path), timeout=180)
        lists = proxy.count(path_contains="/tags/list")
    print(f"peak RSS {run.max_rss / 2**20:.0f} MB, {run.elapsed:.1f} s, {lists} lists")
    assert run.returncode == 0, run.stderr
    upgrades = json.loads(run.stdout)["upgrades"]
    assert {upgrade["note"] for upgrade in upgrades} == {"no newer version tag"}
    assert lists == 32
    assert run.max_rss < TAG_LIST_RSS_BOUND, f"{run.max_rss / 2**20:.0f} MB"
