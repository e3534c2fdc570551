"""The Grafana operator's Grafana and the Dragonfly operator's Dragonfly, catalogued (issue 39,
item 2), from the operators' own samples (tests/fixtures/operators: each file names its
repository and commit). Both passed unjudged: the Grafana warned unknown-pod-kind, a Dragonfly
without an image in silence."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR
from kmultiarch.engine import EngineResult

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "operators"


def _run(text: str) -> tuple[list[dict[str, object]], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    return list(yaml.safe_load_all(result.stream())), result


def _judged(result: EngineResult) -> list[str]:
    return [image.container.image for pod in result.pods for image in pod.images]


GRAFANA = (FIXTURES / "grafana-configmaps-sidecar.yaml").read_text(encoding="utf-8")
SIDECAR = "ghcr.io/kiwigrid/k8s-sidecar:1.24.5"


def test_a_grafanas_deployment_override_is_its_pods_spec_with_the_version_image() -> None:
    """deployment_reconciler.go: spec.deployment merged over the operator's Deployment (its own
    pod sets no placement); the grafana container, named in the override without an image,
    runs docker.io/grafana/grafana:<spec.version> (getGrafanaImage)."""
    text = GRAFANA.replace(SIDECAR, "registry.test/k8s-sidecar-amd64:1.24.5")
    text = text.replace("spec:\n  deployment:", "spec:\n  version: 11.3.0\n  deployment:", 1)
    (grafana,), result = _run(text)
    pod = grafana["spec"]["deployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod["affinity"] == ARCH_IN_AMD64
    assert sorted(_judged(result)) == [
        "docker.io/grafana/grafana:11.3.0",
        "registry.test/k8s-sidecar-amd64:1.24.5",
    ]
    assert result.findings == []


def test_a_grafana_version_holding_an_image_reference_is_the_image() -> None:
    """getGrafanaImage: strings.ContainsAny(version, ":/@") -> the version itself."""
    text = GRAFANA.replace(
        "spec:\n  deployment:", "spec:\n  version: registry.test/g-amd64:1\n  deployment:", 1
    )
    (grafana,), result = _run(text)
    assert "registry.test/g-amd64:1" in _judged(result)
    pod = grafana["spec"]["deployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert pod["affinity"] == ARCH_IN_AMD64


def test_a_grafana_container_naming_its_image_replaces_the_operators() -> None:
    """Containers merge by name: the override's grafana image is the one that runs."""
    text = GRAFANA.replace(
        "            - name: grafana\n",
        "            - name: grafana\n              image: registry.test/grafana-amd64:1\n",
    )
    _, result = _run(text)
    assert sorted(_judged(result)) == [SIDECAR, "registry.test/grafana-amd64:1"]
    assert result.findings == []  # no spec.version needed


def test_the_grafana_sample_as_it_is_runs_the_operators_own_version() -> None:
    (grafana,), result = _run(GRAFANA)
    assert "affinity" not in grafana["spec"]["deployment"]["spec"]["template"]["spec"]  # type: ignore[index]
    assert [finding.rule for finding in result.findings] == [IMAGE_CHOSEN_BY_OPERATOR]


def test_a_grafana_without_a_deployment_gets_one_created_for_its_tolerations() -> None:
    text = (
        "apiVersion: grafana.integreatly.org/v1beta1\nkind: Grafana\nmetadata: {name: g}\n"
        "spec:\n  version: 11.3.0\n"
    )
    (grafana,), _ = _run(text)
    assert grafana["spec"]["deployment"] == {  # type: ignore[index]
        "spec": {"template": {"spec": {"tolerations": [ARM64_TOLERATION]}}}
    }


DRAGONFLY = (FIXTURES / "dragonfly-sample.yaml").read_text(encoding="utf-8")


def test_a_dragonfly_with_an_image_and_placement_fields_is_placed_by_its_spec() -> None:
    """resources.go GenerateDragonflyResources: the pod's affinity, nodeSelector and tolerations
    are spec's; its dragonfly container runs spec.image. It passed unjudged."""
    text = DRAGONFLY + (
        "  image: registry.test/dragonfly-amd64:v1.21.2\n"
        "  tolerations: [{key: dedicated, operator: Equal, value: cache, effect: NoSchedule}]\n"
    )
    (dragonfly,), result = _run(text)
    assert dragonfly["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert result.findings == []


def test_a_dragonfly_sample_without_an_image_runs_the_operators_choice() -> None:
    """spec.image unset: the operator's --dragonfly-image, else its version's image."""
    (dragonfly,), result = _run(DRAGONFLY)
    assert dragonfly == yaml.safe_load(DRAGONFLY)
    assert [finding.rule for finding in result.findings] == [IMAGE_CHOSEN_BY_OPERATOR]


def test_a_dragonflys_additional_containers_are_judged_with_its_image() -> None:
    """mergeNamedSlices(containers, spec.additionalContainers): they run in the same pod."""
    text = DRAGONFLY + (
        "  image: registry.test/dragonfly:v1.21.2\n"
        "  additionalContainers: [{name: exporter, image: registry.test/exporter-amd64:1}]\n"
    )
    (dragonfly,), _ = _run(text)
    assert dragonfly["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
