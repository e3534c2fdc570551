"""``kmultiarch cache info|clear``."""

from __future__ import annotations

from pathlib import Path

import click

from kmultiarch.output.safe import printable
from kmultiarch.resolve.cache import DiskCacheBackend, default_cache_dir, inspect_disk_cache


def show_cache_info(directory: Path | None) -> int:
    """What the disk cache holds, read-only: showing it creates and changes nothing."""
    directory = directory or default_cache_dir()
    summary = inspect_disk_cache(directory)
    if summary is None:
        click.echo(f"directory: {printable(str(directory))} (empty: not created yet)")
        return 0
    keys = list(summary.keys)
    click.echo(f"directory: {printable(str(summary.directory))}")
    click.echo(f"entries:   {len(keys)} ({_kinds(keys)})")
    click.echo(f"size:      {summary.volume} bytes")
    return 0


def _kinds(keys: list[str]) -> str:
    """How many entries of each kind: digests' platforms, tags, verification verdicts, the
    indexes listing platform manifests."""
    platforms = sum(1 for key in keys if key.startswith("platforms:"))
    tags = sum(1 for key in keys if key.startswith("tag:"))
    verdicts = sum(1 for key in keys if key.startswith("verify:"))
    listings = sum(1 for key in keys if key.startswith("listed:"))
    return (
        f"{platforms} digests, {tags} tags"
        + (f", {verdicts} verdicts" if verdicts else "")
        + (f", {listings} listed manifests" if listings else "")
    )


def clear_cache(directory: Path | None) -> int:
    directory = directory or default_cache_dir()
    if not directory.exists():
        click.echo(f"{printable(str(directory))}: nothing to clear")
        return 0
    backend = DiskCacheBackend(directory)
    try:
        removed = backend.clear()
    finally:
        backend.close()
    click.echo(f"{printable(str(directory))}: removed {removed} entries")
    return 0


def show_shared_info(url: str, ca: str | None = None, key_file: str | None = None) -> int:
    import os

    from kmultiarch.cli.session import CACHE_KEY_ENV, warn
    from kmultiarch.resolve.shared import LISTING_BUDGET, SharedCacheBackend
    from kmultiarch.resolve.signing import CacheKeyError
    from kmultiarch.run.session import shared_cache_key

    try:
        key = shared_cache_key(
            key_file,
            os.environ.get(CACHE_KEY_ENV) or None,
            f"the file {key_file}" if key_file else f"${CACHE_KEY_ENV}",
        )
    except CacheKeyError as exc:
        warn(str(exc))
        return 1
    # Listing is bounded in time as a whole (a server may page SCAN for ever, slowly).
    backend = SharedCacheBackend(
        url, ca=ca, key=key, budget=LISTING_BUDGET, budget_name="cache info's deadline"
    )
    try:
        keys = list(backend.keys())
        entries = [k for k in keys if k.startswith(("platforms:", "tag:", "verify:", "listed:"))]
        signed = backend.verified(entries) if key is not None else None
        for message in backend.warnings:
            warn(message)
        if backend.warnings:
            return 1
        click.echo(f"shared:    {backend.shown_url}")
        click.echo(f"entries:   {len(keys)} ({_kinds(keys)})")
        if signed is not None:
            click.echo(f"signed:    {signed} of {len(entries)} signed with this key")
    finally:
        backend.close()
    return 0


def clear_shared(url: str, ca: str | None = None) -> int:
    from kmultiarch.cli.session import warn
    from kmultiarch.resolve.shared import LISTING_BUDGET, SharedCacheBackend

    backend = SharedCacheBackend(
        url, ca=ca, budget=LISTING_BUDGET, budget_name="cache clear's deadline"
    )
    try:
        removed = backend.clear()
        for message in backend.warnings:
            warn(message)
        if backend.warnings:
            return 1
    finally:
        backend.close()
    click.echo(f"{backend.shown_url}: removed {removed} entries")
    return 0
