"""The Loki operator's LokiStack (issue 39, item 2), from the operator's own sample
(tests/fixtures/operators/loki-lokistack.yaml: grafana/loki
operator/config/samples/loki_v1_lokistack.yaml, commit
65e30f8488e8a5ea2013c6881675f8103a8f6bc7). The kind was unknown: an unknown-pod-kind warning
and nothing written."""

from __future__ import annotations

import yaml
from support.declared import declared_defaults, policy, sample
from support.operators import ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR, UNWRITABLE_CONSTRAINT
from kmultiarch.engine import EngineResult

SAMPLE = sample("loki-lokistack.yaml")
COMPONENTS = ("compactor", "distributor", "ingester", "querier", "queryFrontend", "indexGateway")


def _run(text: str, *images: str) -> tuple[dict[str, object], EngineResult]:
    policy = declared_defaults("loki.grafana.com/v1", "LokiStack", *images) if images else None
    result = mutate_text(text, policy, resolve=resolve)
    (stack,) = yaml.safe_load_all(result.stream())
    return stack["spec"], result


def test_a_lokistacks_images_are_the_operators_choice() -> None:
    """var.go: Loki runs the operator's RELATED_IMAGE_LOKI; the LokiStack names no image."""
    spec, result = _run(SAMPLE)
    assert spec == yaml.safe_load(SAMPLE.split("\n", 2)[2])["spec"]
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}
    assert any("RELATED_IMAGE_LOKI" in f.message for f in result.findings)


def test_declared_images_tolerate_arm64_in_each_components_template() -> None:
    """compactor.go, distributor.go...: each component's pods take spec.template.<component>
    tolerations (created when missing); the ruler and gateway only when they run."""
    spec, result = _run(SAMPLE, "registry.test/loki:3.7.3")
    template = spec["template"]  # type: ignore[index]
    assert template == {name: {"tolerations": [ARM64_TOLERATION]} for name in COMPONENTS}
    assert result.findings == []


def test_an_amd64_only_loki_cannot_be_kept_off_arm64_by_an_affinity() -> None:
    """var.go configureAffinity: the pods' affinity is the operator's; no LokiStack field takes
    a node affinity, so the constraint is said, never written."""
    spec, result = _run(SAMPLE, "registry.test/loki-amd64:3.7.3")
    assert "template" not in spec
    assert {f.rule for f in result.findings} == {UNWRITABLE_CONSTRAINT}
    assert all("nodeSelector" in f.message for f in result.findings)


def test_a_policy_says_an_object_has_no_affinity_field() -> None:
    """spec.podSpecs writesAffinity: false, as the catalogue's LokiStack components: the
    tolerations are written, an affinity never (the warning says so)."""
    entry = (
        "  podSpecs:\n  - apiVersion: example.com/v1\n    kind: Store\n    placements:\n"
        "    - {path: /spec/node, creates: 1, writesAffinity: false, images: [[/spec/image]]}\n"
    )
    store = "apiVersion: example.com/v1\nkind: Store\nmetadata: {name: s}\nspec:\n  image: %s\n"
    result = mutate_text(store % "registry.test/store:1", policy(entry), resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    assert document["spec"]["node"] == {"tolerations": [ARM64_TOLERATION]}
    result = mutate_text(store % "registry.test/store-amd64:1", policy(entry), resolve=resolve)
    (document,) = yaml.safe_load_all(result.stream())
    assert "node" not in document["spec"]
    assert [f.rule for f in result.findings] == [UNWRITABLE_CONSTRAINT]
