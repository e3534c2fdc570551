"""Exact placements (issue 28, items 6, 12, 13, 14, 16): `creates` never makes up a `*`, a
placement or an image of the wrong type is a warning naming the field, pointer escapes mean the
same everywhere, deep pointers are refused, and non-finite numbers in a policy are errors. Each
test is named after the symptom it holds gone."""

from __future__ import annotations

import pytest
import yaml
from support.operators import ARCH_IN_AMD64, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR, MALFORMED_FIELD
from kmultiarch.core.operators.catalogue import CATALOGUE
from kmultiarch.core.operators.model import MAX_POINTER_TOKENS, placement_problems
from kmultiarch.errors import PolicyError
from kmultiarch.io.config import parse_policy_text

HEAD = "apiVersion: kmultiarch.dev/v1alpha1\nkind: MultiArchPolicy\nmetadata: {name: p}\nspec:\n"


def _run(text: str, spec: str = "") -> tuple[list[dict[str, object]], object]:
    policy = parse_policy_text(HEAD + spec, "policy.yaml") if spec else None
    result = mutate_text(text, policy, resolve=resolve)
    return list(yaml.safe_load_all(result.stream())), result


# -- item 6: creates over a wildcard ---------------------------------------------------------


def test_creates_over_a_wildcard_is_a_policy_error_naming_the_key_not_a_pool_named_star() -> None:
    with pytest.raises(PolicyError, match=r"spec\.podSpecs\[0\]\.placements\[0\]\.creates: .*`\*`"):
        parse_policy_text(
            HEAD + "  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Store\n"
            "    placements:\n"
            "    - {path: /spec/pools/*/scheduling, creates: 2, images: [/spec/image]}\n",
            "policy.yaml",
        )


def test_creates_after_the_last_wildcard_writes_into_every_existing_pool() -> None:
    (store,), _ = _run(
        "apiVersion: example.com/v1\nkind: Store\nmetadata: {name: s}\n"
        "spec:\n  image: registry.test/store-amd64:1\n  pools: [{name: a}, {name: b}]\n",
        "  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Store\n"
        "    placements: [{path: /spec/pools/*/scheduling, creates: 1, images: [/spec/image]}]\n",
    )
    pools = store["spec"]["pools"]  # type: ignore[index]
    assert [pool["scheduling"] for pool in pools] == [{"affinity": ARCH_IN_AMD64}] * 2
    assert "*" not in str(store)


def test_every_built_in_placement_passes_the_checks_a_policy_placement_does() -> None:
    assert [
        (entry.kind, placement.path, placement_problems(placement))
        for entry in CATALOGUE
        for placement in entry.placements
        if placement_problems(placement)
    ] == []


# -- item 12: values of the wrong type ---------------------------------------------------------


def test_a_kafka_whose_template_pod_is_a_string_is_a_warning_naming_the_field() -> None:
    text = (
        "apiVersion: kafka.strimzi.io/v1\nkind: Kafka\nmetadata: {name: k, namespace: m}\n"
        "spec:\n  kafka:\n    image: registry.test/kafka-amd64:1\n    template:\n"
        "      pod: oops\n"
    )
    (kafka,), result = _run(text)
    assert kafka == yaml.safe_load(text)  # nothing written over the user's value
    (finding,) = [f for f in result.findings if f.rule == MALFORMED_FIELD]
    assert finding.severity == "warning"
    assert finding.resource is not None and finding.resource.display_name == "Kafka m/k"
    assert finding.field_path == "spec.kafka.template.pod"
    assert "spec.kafka.template.pod is a string" in finding.message
    assert [pod.status for pod in result.pods] == ["malformed"]
    assert finding.line == 8  # the line of the field


def test_a_placement_list_of_the_wrong_type_is_a_warning_naming_the_field() -> None:
    """ECK's nodeSets are a list; a mapping of strings holds no pod template."""
    (_,), result = _run(
        "apiVersion: elasticsearch.k8s.elastic.co/v1\nkind: Elasticsearch\nmetadata: {name: e}\n"
        "spec:\n  version: 8.15.0\n  nodeSets: [default]\n"
    )
    (finding,) = [f for f in result.findings if f.rule == MALFORMED_FIELD]
    assert finding.field_path == "spec.nodeSets[0]"
    assert "is a string" in finding.message


def test_an_image_of_the_wrong_type_is_a_warning_naming_the_field_and_not_judged() -> None:
    (_,), result = _run(
        "apiVersion: kafka.strimzi.io/v1\nkind: KafkaBridge\nmetadata: {name: b}\n"
        "spec:\n  image: {repository: registry.test/bridge}\n"
    )
    rules = sorted(f.rule for f in result.findings)
    assert rules == [IMAGE_CHOSEN_BY_OPERATOR, MALFORMED_FIELD]
    (finding,) = [f for f in result.findings if f.rule == MALFORMED_FIELD]
    assert finding.field_path == "spec.image" and "is an object" in finding.message


# -- item 13: pointer escapes --------------------------------------------------------------------


def test_pointer_escapes_mean_the_same_in_paths_images_and_default_image_templates() -> None:
    """``~1`` is ``/`` and ``~0`` is ``~`` (RFC 6901) in a placement's path, its images and a
    defaultImages template alike: the default is used, not passed over."""
    policy = (
        "  podSpecs:\n  - apiVersion: example.com/v1\n    kind: App\n"
        "    placements: [{path: /spec/sched~1uling, creates: 1, images: [[/spec/im~0age]]}]\n"
        "    defaultImages: ['registry.test/app-amd64:{/spec/app.kubernetes.io~1version}']\n"
    )
    (app,), result = _run(
        "apiVersion: example.com/v1\nkind: App\nmetadata: {name: a}\n"
        "spec:\n  app.kubernetes.io/version: '1.2'\n",
        policy,
    )
    assert {str(r) for r in result.resolutions} == {"registry.test/app-amd64:1.2"}
    assert app["spec"]["sched/uling"] == {"affinity": ARCH_IN_AMD64}  # type: ignore[index]
    (app,), result = _run(
        "apiVersion: example.com/v1\nkind: App\nmetadata: {name: a}\n"
        "spec:\n  im~age: registry.test/named-amd64:1\n",
        policy,
    )
    assert {str(r) for r in result.resolutions} == {"registry.test/named-amd64:1"}


# -- item 14: deep pointers ---------------------------------------------------------------------


def test_a_placement_path_of_a_thousand_tokens_is_a_policy_error_not_a_recursion_crash() -> None:
    path = "/a" * 1000
    with pytest.raises(
        PolicyError,
        match=rf"spec\.podSpecs\[0\]\.placements\[0\]\.path: .*at most {MAX_POINTER_TOKENS}",
    ):
        parse_policy_text(
            HEAD + "  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Deep\n"
            f"    placements: [{{path: '{path}', creates: 999, images: [/spec/image]}}]\n",
            "policy.yaml",
        )


def test_a_placement_path_of_the_most_tokens_allowed_is_created_without_a_crash() -> None:
    path = "/spec" + "/a" * (MAX_POINTER_TOKENS - 1)
    (deep,), _ = _run(
        "apiVersion: example.com/v1\nkind: Deep\nmetadata: {name: d}\n"
        "spec: {image: registry.test/deep-amd64:1}\n",
        "  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Deep\n"
        f"    placements: [{{path: '{path}', creates: {MAX_POINTER_TOKENS - 1}, "
        "images: [[/spec/image]]}]\n",
    )
    node: object = deep["spec"]
    for _ in range(MAX_POINTER_TOKENS - 1):
        assert isinstance(node, dict)
        node = node["a"]
    assert node == {"affinity": ARCH_IN_AMD64}


# -- item 16: non-finite numbers -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("  verify: {mode: warn, maxBytes: .inf}\n", "spec.verify.maxBytes"),
        ("  verify: {mode: warn, maxBytes: .nan}\n", "spec.verify.maxBytes"),
        ("  verify: {mode: warn, maxExpandedBytes: .inf}\n", "spec.verify.maxExpandedBytes"),
        ("  verify: {mode: warn, maxExpandedBytes: .nan}\n", "spec.verify.maxExpandedBytes"),
        ("  verify: {mode: warn, deadline: .nan}\n", "spec.verify.deadline"),
        ("  verify: {mode: warn, deadline: .inf}\n", "spec.verify.deadline"),
        ("  staleIfError: .inf\n", "spec.staleIfError"),
        ("  staleIfError: .nan\n", "spec.staleIfError"),
    ],
)
def test_non_finite_numbers_in_the_policy_are_errors_naming_the_key(text: str, key: str) -> None:
    with pytest.raises(PolicyError, match=rf"{key.replace('.', '[.]')}: expected a finite number"):
        parse_policy_text(HEAD + text, "p.yaml")
