"""Overrides written as users write image names (issue 36, item 16): ``{image: acme/app:1.0}``
and ``nginx:*`` never matched the normalised ``docker.io/acme/app:1.0`` /
``docker.io/library/nginx:1.25``, and the run said only "could not be resolved". A glob is now
normalised as references are (docker.io, library/, the host's spelling, ``:latest``), glob
characters kept; an override that matches no image of the run is reported."""

from __future__ import annotations

import fnmatch

import pytest

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef, normalised_glob
from kmultiarch.core.policy.model import Override, ResolutionPolicy
from kmultiarch.core.policy.schema import policy_from_spec

AMD64 = Platform("linux", "amd64")


@pytest.mark.parametrize(
    ("written", "normalised"),
    [
        ("acme/app:1.0", "docker.io/acme/app:1.0"),
        ("nginx:*", "docker.io/library/nginx:*"),
        ("nginx", "docker.io/library/nginx:latest"),
        ("library/nginx:1.2?", "docker.io/library/nginx:1.2?"),
        ("acme/*", "docker.io/acme/*"),
        ("acme/app*", "docker.io/acme/app*"),
        ("acme/*:1.0", "docker.io/acme/*:1.0"),
        ("nginx@sha256:*", "docker.io/library/nginx@sha256:*"),
        ("Docker.io/nginx:*", "docker.io/library/nginx:*"),
        ("index.docker.io/library/nginx:1.25", "docker.io/library/nginx:1.25"),
        ("docker.io/nginx:1.25", "docker.io/library/nginx:1.25"),
        ("LOCALHOST:5000/app:1", "localhost:5000/app:1"),
        ("localhost:5000/app", "localhost:5000/app:latest"),
        # already normalised, or any registry: as written
        ("docker.io/library/nginx:1.27", "docker.io/library/nginx:1.27"),
        ("ghcr.io/acme/*", "ghcr.io/acme/*"),
        ("docker.io/*", "docker.io/*"),
        ("*", "*"),
        ("*/acme/app:*", "*/acme/app:*"),
        ("[ab]cme/app", "[ab]cme/app"),
    ],
)
def test_a_glob_is_normalised_as_references_are(written: str, normalised: str) -> None:
    assert normalised_glob(written) == normalised


@pytest.mark.parametrize(
    ("written", "reference"),
    [
        ("acme/app:1.0", "acme/app:1.0"),
        ("nginx:*", "nginx:1.25"),
        ("nginx", "nginx"),
        ("library/nginx:1.2?", "docker.io/library/nginx:1.25"),
        ("index.docker.io/acme/*", "acme/app:2"),
    ],
)
def test_overrides_written_as_users_write_image_names_match(written: str, reference: str) -> None:
    policy = policy_from_spec(
        {"overrides": [{"image": written, "platforms": ["linux/amd64"]}]}, "policy.yaml"
    )
    override = policy.resolution.override_of(ImageRef.parse(reference))
    assert override is not None and override.written == written
    # the glob as written does not match the normalised reference: it matched nothing before
    assert not fnmatch.fnmatchcase(str(ImageRef.parse(reference)), written)


def test_glob_characters_keep_working() -> None:
    policy = policy_from_spec(
        {"overrides": [{"image": "nginx:1.2?", "platforms": ["linux/amd64"]}]}, "policy.yaml"
    )
    resolution = policy.resolution
    assert resolution.override_of(ImageRef.parse("nginx:1.25")) is not None
    assert resolution.override_of(ImageRef.parse("nginx:1.3")) is None
    assert resolution.override_of(ImageRef.parse("acme/nginx:1.25")) is None


def test_an_override_that_matches_no_image_of_the_run_is_unused() -> None:
    used = Override("docker.io/library/nginx:*", frozenset({AMD64}), written="nginx:*")
    digest_only = Override("docker.io/acme/app:1.0", frozenset({AMD64}), written="acme/app:1.0")
    unused = Override("docker.io/acme/typo:*", frozenset({AMD64}), written="acme/typo:*")
    policy = ResolutionPolicy(overrides=(used, digest_only, unused))
    references = [
        ImageRef.parse("nginx:1.25"),
        ImageRef.parse("acme/app:1.0@sha256:" + "a" * 64),  # by its name and tag
    ]
    assert policy.unused_overrides(references) == [(2, unused)]
    assert policy.unused_overrides([]) == [(0, used), (1, digest_only), (2, unused)]
