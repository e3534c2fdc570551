"""``kmultiarch verify IMAGE...``: is the program each platform manifest starts built for the
platform it claims?"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

import click

from kmultiarch.core.findings import count_of
from kmultiarch.core.images.reference import ImageRef

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions

_SIZE = re.compile(r"\s*([0-9]+)\s*([kmg]i?b?|b)?\s*\Z", re.IGNORECASE)
_UNITS = {"": 1, "b": 1, "k": 1000, "m": 1000**2, "g": 1000**3}
_BINARY = {"k": 1024, "m": 1024**2, "g": 1024**3}


def parse_size(text: str, option: str) -> int:
    """``64MiB``, ``1GiB``, ``500k``, ``1048576``: a byte count (``KiB``, ``MiB``, ``GiB``
    are powers of 1024, ``K``/``KB``, ``M``, ``G`` of 1000)."""
    match = _SIZE.match(text)
    if match is None:
        raise click.BadParameter(
            f"{text!r} is not a size (e.g. 64MiB, 1GiB, 500000)", param_hint=option
        )
    number, unit = int(match.group(1)), (match.group(2) or "").lower()
    scale = _BINARY[unit[0]] if "i" in unit else _UNITS[unit[:1]]
    if number * scale < 1024:
        raise click.BadParameter(f"{text!r} is less than 1 KiB", param_hint=option)
    return number * scale


def verify_images(
    options: RunOptions,
    images: list[str],
    output: str,
    max_bytes: str | None,
    max_expanded: str | None,
    deadline: float | None,
) -> int:
    """Exit 1 when any platform manifest starts a binary of another machine (``mismatch``)
    or an image cannot be read at all; ``unverified`` platforms are reported, not failed.
    Bounds not given are the policy's (``spec.verify``)."""
    from kmultiarch.cli.pipeline import say_findings
    from kmultiarch.cli.session import fail, note
    from kmultiarch.output.verification import verification_document, verification_text
    from kmultiarch.resolve.verify import VerifyBounds
    from kmultiarch.resolve.verify import verify_images as verify
    from kmultiarch.run.session import Session

    references = list(dict.fromkeys(ImageRef.parse(image) for image in images))
    policy = options.load_policy()
    asked = policy.resolution.verify
    bounds = VerifyBounds(
        parse_size(max_bytes, "--max-bytes") if max_bytes is not None else asked.max_bytes,
        parse_size(max_expanded, "--max-expanded")
        if max_expanded is not None
        else asked.max_expanded_bytes,
        deadline if deadline is not None else asked.deadline,
    )
    config = options.configure(policy)
    with Session(config) as session:
        resolutions = session.resolver.resolve(references)
        run = verify(
            [resolutions[reference] for reference in references],
            session.cache,
            registries=policy.resolution.registries,
            settings=config.client,
            credentials=session.credentials(),
            bounds=bounds,
        )
        say_findings(session.findings(), options)
    results = list(run.results.values())
    if output == "json":
        sys.stdout.write(verification_document(results, run.stats.per_manifest))
    else:
        sys.stdout.write(verification_text(results))
    sys.stdout.flush()
    stats = run.stats
    if not options.quiet and stats.platforms:
        note(
            f"{count_of(stats.platforms, 'platform manifest')} "
            f"({stats.cached} from the cache); {stats.downloaded} layer bytes downloaded in "
            f"{count_of(stats.layers_opened, 'layer request')}, "
            f"{sum(run.requests.values())} registry requests in all"
        )
    failed = [result for result in results if result.error is not None]
    for result in failed:
        fail(result.error or f"{result.reference}: not verified")
    mismatched = any(result.mismatched for result in results)
    return 1 if failed or mismatched else 0
