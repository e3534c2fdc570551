"""``kmultiarch inspect IMAGE...``."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from kmultiarch.core.images.platform import format_platforms
from kmultiarch.core.images.reference import ImageRef

if TYPE_CHECKING:
    from kmultiarch.cli.session import RunOptions
    from kmultiarch.core.resolution import Resolution


def inspect_images(options: RunOptions, images: list[str], output: str) -> int:
    from kmultiarch.cli.pipeline import say_findings
    from kmultiarch.cli.session import fail
    from kmultiarch.run.session import Session

    references = [ImageRef.parse(image) for image in images]
    policy = options.load_policy()
    with Session(options.configure(policy)) as session:
        results = session.resolver.resolve(references)
        say_findings(session.findings(), options)
    ordered = [results[reference] for reference in dict.fromkeys(references)]
    if output == "json":
        click.echo(json.dumps([_as_json(result) for result in ordered], indent=2))
    else:
        click.echo(_as_text(ordered), nl=False)
    failed = [result for result in ordered if not result.ok]
    for result in failed:
        fail(str(result.error) if result.error else f"{result.reference}: not resolved")
    return 1 if failed else 0


def _as_json(result: Resolution) -> dict[str, object]:
    reference = result.reference
    return {
        "image": str(reference),
        "registry": reference.registry,
        "repository": reference.repository,
        "tag": reference.tag,
        "digest": result.digest,
        "mediaType": result.media_type,
        "platforms": sorted(str(p) for p in result.platforms),
        "source": result.source,
        "error": str(result.error) if result.error else None,
    }


def _as_text(results: list[Resolution]) -> str:
    lines = []
    for result in results:
        if not result.ok:
            continue
        lines.append(str(result.reference))
        lines.append(f"  registry:   {result.reference.registry}")
        lines.append(f"  repository: {result.reference.repository}")
        lines.append(f"  digest:     {result.digest or '(not known: declared by an override)'}")
        lines.append(f"  platforms:  {format_platforms(result.platforms)}")
    return "\n".join(lines) + ("\n" if lines else "")
