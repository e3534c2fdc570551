"""Fuzzing (issue 7, item 5): hypothesis properties over the parsers and over mutate.

tests/unit already checks the parsers on arbitrary unicode text and JSON; these properties
add what those do not reach: text drawn from each grammar's own alphabet (so the parsers get
past their first character), mutations of real registry answers (the catalogue's manifests,
byte by byte and value by value), the other parsers of outside input (policies, lock files,
``WWW-Authenticate`` and ``Retry-After`` headers), ``read_stream`` on YAML-alphabet text, and
mutate itself: on generated streams of workloads and other documents in every YAML style, the
engine's output reads back as YAML, a second run changes nothing, and documents without pod
templates come out byte for byte. Image platforms are declared with policy ``overrides`` (a
real feature), so nothing touches the network: the resolver's client factory refuses to run.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.seed import SEEDED

from kmultiarch.core.images.oci import parse_config_platform, parse_manifest, verify_digest
from kmultiarch.core.images.platform import Platform
from kmultiarch.core.images.reference import ImageRef
from kmultiarch.core.operators.workloads import find_workloads
from kmultiarch.core.policy.model import Policy
from kmultiarch.engine import run
from kmultiarch.errors import (
    InputError,
    InvalidPlatformError,
    InvalidReferenceError,
    KmultiarchError,
    ManifestError,
    ManifestStreamError,
    PolicyError,
)
from kmultiarch.io.config import parse_lock, parse_policy_text
from kmultiarch.registry.challenge import parse_challenge
from kmultiarch.registry.retries import parse_retry_after as _retry_after
from kmultiarch.resolve.cache import MemoryCacheBackend, ResolutionCache
from kmultiarch.resolve.resolver import Resolver
from kmultiarch.yaml.stream import InputSource, decode_source, read_stream

SOURCE = "fuzz"
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- references and platforms: text from their own alphabets -----------------------------------

_REFERENCE_ALPHABET = "abcxyzAZ09_.-:/@" + "sha256" + "\u00e9\u0131 \t\n%#"
_PLATFORM_ALPHABET = "linuxwindowsamd64arm64v78x86_/.:-0123456789 LINUX\u0130"


@FUZZ
@given(st.text(_REFERENCE_ALPHABET, max_size=300))
def test_reference_parser_on_reference_alphabet(text: str) -> None:
    try:
        reference = ImageRef.parse(text)
    except InvalidReferenceError:
        return
    assert ImageRef.parse(str(reference)) == reference
    assert reference.tag is not None or reference.digest is not None


@FUZZ
@given(
    st.sampled_from(["nginx", "ghcr.io/o/app:1.0", "localhost:5000/a/b@sha256:" + "a" * 64]),
    st.lists(
        st.tuples(st.integers(0, 80), st.text(_REFERENCE_ALPHABET, min_size=0, max_size=3)),
        max_size=4,
    ),
)
def test_reference_parser_on_mutated_references(base: str, edits: list[tuple[int, str]]) -> None:
    text = base
    for position, replacement in edits:
        position %= len(text) + 1
        text = text[:position] + replacement + text[position + 1 :]
    test_reference_parser_on_reference_alphabet.hypothesis.inner_test(text)  # type: ignore[attr-defined]


@FUZZ
@given(st.text(_PLATFORM_ALPHABET, max_size=60))
def test_platform_parser_on_platform_alphabet(text: str) -> None:
    try:
        platform = Platform.parse(text)
    except InvalidPlatformError:
        return
    assert Platform.parse(str(platform)) == platform


@pytest.mark.parametrize(
    "parse",
    [ImageRef.parse, Platform.parse],
    ids=["reference", "platform"],
)
@pytest.mark.parametrize(
    "text",
    [
        "a" * 100_000,
        "a/" * 50_000,
        "a:" * 50_000,
        "a." * 50_000 + "!",
        "localhost:" + "9" * 100_000,
        "x@sha256:" + "a" * 100_000,
        "linux/" + "amd64/" * 20_000,
    ],
    ids=["letters", "slashes", "colons", "dots", "port", "digest", "platforms"],
)
def test_parsers_take_linear_time_on_long_input(parse: Any, text: str) -> None:
    """No regular expression that backtracks: 100 kB of pathological input in well under a
    second (the bound is generous for a loaded machine)."""
    started = time.monotonic()
    with contextlib.suppress(KmultiarchError):
        parse(text)
    assert time.monotonic() - started < 2.0


# -- manifests: the catalogue's real answers, damaged ------------------------------------------

_BODIES = sorted(
    {manifest.data for image in SEEDED.values() for manifest in image.manifest.walk()}
    | {blob.data for image in SEEDED.values() for m in image.manifest.walk() for blob in m.blobs}
    - {b""}
)
_BODIES = [body for body in _BODIES if body.lstrip().startswith(b"{")]  # manifests and configs
_CONTENT_TYPES = st.sampled_from(
    [
        None,
        "",
        "application/vnd.oci.image.index.v1+json",
        "application/vnd.docker.distribution.manifest.v2+json",
        "text/html",
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=10), children, max_size=3)
    ),
    max_leaves=10,
)


def _only_own_errors(body: bytes, content_type: str | None) -> None:
    with contextlib.suppress(KmultiarchError):
        parse_manifest(body, content_type, source=SOURCE)
    with contextlib.suppress(KmultiarchError):
        parse_config_platform(body, source=SOURCE)


@FUZZ
@given(
    st.sampled_from(_BODIES),
    st.lists(st.tuples(st.integers(0, 10_000), st.binary(max_size=4)), min_size=1, max_size=6),
    _CONTENT_TYPES,
)
def test_manifests_damaged_byte_by_byte(
    body: bytes, edits: list[tuple[int, bytes]], content_type: str | None
) -> None:
    for position, replacement in edits:
        position %= len(body) + 1
        body = body[:position] + replacement + body[position + 1 :]
    _only_own_errors(body, content_type)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


@FUZZ
@given(st.sampled_from(_BODIES), st.data(), _CONTENT_TYPES)
def test_manifests_with_a_value_replaced(body: bytes, data: Any, content_type: str | None) -> None:
    document = json.loads(body)
    path = data.draw(st.sampled_from(_paths(document)))
    replacement = data.draw(_JSON)
    if not path:
        document = replacement
    else:
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = replacement
    _only_own_errors(json.dumps(document).encode(), content_type)


@FUZZ
@given(st.binary(max_size=64), st.text("sha256512md5:0123456789abcdefABCDEF", max_size=140))
def test_digest_verification_raises_only_manifest_errors(body: bytes, expected: str) -> None:
    try:
        verify_digest(body, expected, source=SOURCE)
    except ManifestError:
        return


# -- other parsers of outside input ------------------------------------------------------------

_HEADER_ALPHABET = 'BearerBasic realm=service=scope="\\,: /http127.0.0.1abc\t'


@FUZZ
@given(st.text(_HEADER_ALPHABET, max_size=200) | st.text(max_size=100))
def test_www_authenticate_parser_never_raises(header: str) -> None:
    challenge = parse_challenge(header)
    if challenge is not None:
        assert challenge.scheme == challenge.scheme.lower()
        assert all(isinstance(value, str) for value in challenge.params.values())


@FUZZ
@given(
    st.text("0123456789 ,:-MonTueDecGMTUTC+.", max_size=50)
    | st.integers(-(10**30), 10**30).map(str)
    | st.datetimes().map(lambda moment: moment.strftime("%a, %d %b %Y %H:%M:%S GMT"))
)
def test_retry_after_parser_never_raises_nor_goes_negative(header: str) -> None:
    delay = _retry_after(header)
    assert delay is None or delay >= 0


_POLICY_KEYS = st.sampled_from(
    [
        *("platforms", "tolerations", "nodeAffinity", "failurePolicy", "overrides", "exclude"),
        *("registries", "lock", "linux/arm64", "image", "mirror", "insecure", "ca", "key"),
        # issue 14's keys
        *("podSpecs", "annotate", "fallbackPlatforms", "mode", "preferences", "apiVersion"),
        *("kind", "path", "namespaceSelector", "matchLabels", "matchExpressions", "operator"),
        "values",
    ]
)
_POLICY_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(
        ["linux/amd64", "required", "Fail", "a*", "", "x/y/z/w", "optIn", "In", "/spec/x", "/"]
    )
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(_POLICY_KEYS, children, max_size=3)
    ),
    max_leaves=12,
)


@FUZZ
@given(st.dictionaries(_POLICY_KEYS, _POLICY_VALUES, max_size=5))
def test_policy_parser_raises_only_policy_errors(spec: dict[str, Any]) -> None:
    document = {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "MultiArchPolicy",
        "metadata": {"name": "fuzz"},
        "spec": spec,
    }
    try:
        parse_policy_text(json.dumps(document), SOURCE)
    except InputError as exc:
        assert isinstance(exc, (PolicyError, ManifestStreamError)) or str(exc)


@FUZZ
@given(st.text(max_size=300) | _POLICY_VALUES.map(lambda value: yaml.safe_dump({"images": value})))
def test_lock_parser_raises_only_input_errors(text: str) -> None:
    try:
        parse_lock(text, SOURCE)
    except InputError:
        return


# -- the YAML reader ---------------------------------------------------------------------------

_YAML_ALPHABET = "ab:-[]{},&*!|>'\"#%@`?~.\n \t\r\\0123456789\u00e9\ufeff"


@FUZZ
@given(st.text(_YAML_ALPHABET, max_size=200) | st.text(max_size=100))
def test_read_stream_raises_only_manifest_stream_errors(text: str) -> None:
    try:
        documents = read_stream(text, SOURCE)
    except ManifestStreamError as exc:
        assert str(exc).startswith(f"{SOURCE}:")
        return
    assert "".join(document.text for document in documents) == text.removeprefix("\ufeff")


@FUZZ
@given(st.binary(max_size=200))
def test_decoding_bytes_raises_only_manifest_stream_errors(data: bytes) -> None:
    try:
        text = decode_source(data, SOURCE)
    except ManifestStreamError:
        return
    try:
        read_stream(text, SOURCE)
    except ManifestStreamError:
        return


# -- mutate at the engine level ----------------------------------------------------------------

#: Images and the platforms the policy declares for them.
_DECLARED = {
    "multi": ["linux/amd64", "linux/arm64"],
    "amd": ["linux/amd64"],
    "arm": ["linux/arm64"],
    "armv7": ["linux/arm/v7"],
    "windows": ["windows/amd64"],
    "everything": ["linux/amd64", "linux/arm64", "linux/arm/v7", "linux/s390x"],
}
_POLICY_TEXT = json.dumps(
    {
        "apiVersion": "kmultiarch.dev/v1alpha1",
        "kind": "MultiArchPolicy",
        "metadata": {"name": "fuzz"},
        "spec": {
            "overrides": [
                {"image": f"registry.test/{name}:*", "platforms": platforms}
                for name, platforms in _DECLARED.items()
            ]
        },
    }
)
POLICY: Policy = parse_policy_text(_POLICY_TEXT, "policy")

#: Mostly declared images; now and then a reference that does not parse (a warning, no edit).
_images = st.sampled_from(
    [f"registry.test/{name}:1.0" for name in ("multi", "amd", "arm", "everything") * 3]
    + ["registry.test/armv7:1.0", "registry.test/windows:1.0", "Not A Valid Reference"]
)
_names = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12)
#: Text YAML can hold: no control characters, surrogates, non-characters or Unicode line
#: separators (which YAML folds inside quoted scalars), as in tests/unit/test_yamlstream.py.
_text = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Cn", "Zl", "Zp")), max_size=30
)
_scalars = st.none() | st.booleans() | st.integers() | _text
_arch_values = st.sampled_from(["amd64", "arm64", "s390x"])


@st.composite
def _pod_spec(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {"name": draw(_names), "image": image}
            for image in draw(st.lists(_images, min_size=1, max_size=3))
        ]
    }
    if draw(st.sampled_from([False, False, True])):
        spec["initContainers"] = [{"name": "init", "image": draw(_images)}]
    if draw(st.booleans()):
        spec["tolerations"] = draw(
            st.lists(
                st.fixed_dictionaries(
                    {"key": st.sampled_from(["kubernetes.io/arch", "other", ""])},
                    optional={
                        "operator": st.sampled_from(["Equal", "Exists"]),
                        "value": _arch_values,
                        "effect": st.sampled_from(["NoSchedule", "NoExecute", ""]),
                    },
                ),
                max_size=2,
            )
        )
    if draw(st.booleans()):
        spec["nodeSelector"] = {
            draw(st.sampled_from(["kubernetes.io/arch", "disk"])): draw(_arch_values)
        }
    if draw(st.booleans()):
        term = {
            "matchExpressions": [
                {
                    "key": draw(st.sampled_from(["kubernetes.io/arch", "zone"])),
                    "operator": draw(st.sampled_from(["In", "NotIn", "Exists"])),
                    "values": draw(st.lists(_arch_values, min_size=1, max_size=2)),
                }
            ]
        }
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term, dict(term)][: draw(st.integers(1, 2))]
                }
            }
        }
    return spec


@st.composite
def _workload(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(["Deployment", "StatefulSet", "Job", "CronJob", "Pod", "DaemonSet"])
    )
    api_version = {"Job": "batch/v1", "CronJob": "batch/v1", "Pod": "v1"}.get(kind, "apps/v1")
    spec = draw(_pod_spec())
    metadata: dict[str, Any] = {"name": draw(_names)}
    if draw(st.sampled_from([False] * 9 + [True])):
        metadata["annotations"] = {"kmultiarch.dev/skip": "true"}
    template = {"metadata": {"labels": {"app": metadata["name"]}}, "spec": spec}
    body: dict[str, Any]
    if kind == "Pod":
        body = {"spec": spec}
    elif kind == "CronJob":
        body = {"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": template}}}}
    else:
        body = {"spec": {"template": template}}
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}


_other_documents = st.one_of(
    st.fixed_dictionaries(
        {
            "apiVersion": st.just("v1"),
            "kind": st.just("ConfigMap"),
            "metadata": st.fixed_dictionaries({"name": _names}),
            "data": st.dictionaries(_names, _text, max_size=3),
        }
    ),
    st.fixed_dictionaries(
        {
            "apiVersion": st.sampled_from(["v1", "example.com/v1"]),
            "kind": st.sampled_from(["Service", "Widget", "Namespace"]),
            "metadata": st.fixed_dictionaries({"name": _names}),
            "spec": st.dictionaries(_names, _scalars, max_size=3),
        }
    ),
    # Not Kubernetes objects at all, and a pod spec under a kind with no pod template.
    st.dictionaries(_names, _scalars, max_size=3),
    st.lists(_scalars, max_size=3),
    _pod_spec().map(lambda spec: {"apiVersion": "v1", "kind": "ConfigMap", "spec": spec}),
)


def _render(document: Any, style: str, indent: int) -> str:
    if style == "json":
        # ensure_ascii=False: libyaml refuses the surrogate-pair escapes json.dumps writes for
        # characters beyond U+FFFF (a known gap, see tests/unit/test_yamlstream.py).
        return json.dumps(document, indent=indent, ensure_ascii=False) + "\n"
    flow = {"block": False, "mixed": None, "flow": True}[style]
    return yaml.safe_dump(document, default_flow_style=flow, indent=indent, sort_keys=False)


@st.composite
def _streams(draw: st.DrawFn) -> str:
    # Two workloads for one other document (st.one_of would weigh each kind of other
    # document like the workloads).
    kinds = draw(
        st.lists(st.sampled_from(["workload", "workload", "other"]), min_size=1, max_size=5)
    )
    documents = [draw(_workload() if kind == "workload" else _other_documents) for kind in kinds]
    parts = []
    for document in documents:
        text = _render(
            document,
            draw(st.sampled_from(["block", "mixed", "flow", "json"])),
            draw(st.sampled_from([2, 4])),
        )
        if draw(st.booleans()):
            text = "# Source: chart/templates/x.yaml\n" + text
        parts.append(text)
    stream = "---\n".join(parts)
    if draw(st.integers(0, 4)) == 0:
        stream = stream.replace("\n", "\r\n")
    return stream


def _no_network() -> Any:
    raise AssertionError("the fuzzed streams only use images the policy declares")


def _mutate(text: str) -> tuple[str, list[str], list[str]]:
    """The engine's output for ``text``, and the input and output document texts."""
    resolver = Resolver(
        POLICY.resolution, ResolutionCache(MemoryCacheBackend()), client_factory=_no_network
    )
    result = run([InputSource(SOURCE, text)], POLICY, resolver.resolve)
    outcomes = result.documents[SOURCE]
    return (
        result.output_of(SOURCE),
        [outcome.document.text for outcome in outcomes],
        [outcome.text for outcome in outcomes],
    )


@settings(
    max_examples=int(os.environ.get("MUTATE_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(_streams())
def test_mutate_is_idempotent_valid_and_leaves_other_documents_alone(text: str) -> None:
    output, before, after = _mutate(text)
    # YAML-valid: our reader and PyYAML read the output, with as many documents.
    read = read_stream(output, SOURCE)
    assert len(read) == len(before)
    assert len(list(yaml.safe_load_all(output))) == len(list(yaml.safe_load_all(text)))
    # Documents without pod templates come out byte for byte.
    for document, original, produced in zip(read_stream(text, SOURCE), before, after, strict=True):
        if not find_workloads(document.value):
            assert produced == original
    # Idempotent: a second run changes nothing.
    again, _, _ = _mutate(output)
    assert again == output
    event("edited" if output != text else "unchanged")
