"""AppWrapper (issue 39, item 2): the resources it wraps are placed by their own kinds, from
the project's own samples (tests/fixtures/operators/appwrapper-*.yaml: project-codeflare/
appwrapper samples/wrapped-deployment.yaml and samples/wrapped-pytorch-job.yaml, commit
b47a99ee8e289ddd9f968069f1fe61decbb5ef8c). The kind was unknown: an unknown-pod-kind warning
and nothing written."""

from __future__ import annotations

import yaml
from support.declared import policy, sample
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import UNKNOWN_POD_KIND
from kmultiarch.engine import EngineResult

DEPLOYMENT = sample("appwrapper-wrapped-deployment.yaml")
PYTORCH_JOB = sample("appwrapper-wrapped-pytorch-job.yaml")


def _run(text: str, spec: str = "") -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, policy(spec) if spec else None, resolve=resolve)
    (wrapper,) = yaml.safe_load_all(result.stream())
    return wrapper["spec"]["components"][0]["template"], result


def test_an_appwrappers_deployment_is_placed_as_a_deployment() -> None:
    """resource_management.go createComponent: the component's template is created as it is
    (its pod sets' nodeSelector and tolerations merged in, node-health expressions ANDed into
    each required term): the Deployment's pod template places its pods."""
    text = DEPLOYMENT.replace(
        "quay.io/project-codeflare/busybox:1.36", "registry.test/busybox-amd64:1.36"
    )
    deployment, result = _run(text)
    assert deployment["spec"]["template"]["spec"]["affinity"] == ARCH_IN_AMD64  # type: ignore[index]
    assert result.findings == []


def test_an_appwrappers_pytorch_job_is_placed_by_the_catalogues_entry() -> None:
    job, result = _run(PYTORCH_JOB)
    replicas = job["spec"]["pytorchReplicaSpecs"]  # type: ignore[index]
    for role in ("Master", "Worker"):
        assert replicas[role]["template"]["spec"]["tolerations"] == [ARM64_TOLERATION]
    assert not [f for f in result.findings if f.rule == UNKNOWN_POD_KIND]


def test_a_wrapped_resource_is_in_its_appwrappers_namespace() -> None:
    """parseComponent(raw, aw.Namespace): a component naming no namespace is created in the
    AppWrapper's; excluding that namespace excludes it."""
    text = DEPLOYMENT.replace(
        "  name: sample-deployment\n  labels:\n    kueue",
        "  name: sample-deployment\n  namespace: team-a\n  labels:\n    kueue",
        1,
    )
    deployment, _ = _run(text, "  exclude: {namespaces: [team-a]}\n")
    assert "tolerations" not in deployment["spec"]["template"]["spec"]  # type: ignore[index]
    deployment, _ = _run(text)
    assert deployment["spec"]["template"]["spec"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]


def test_an_appwrapper_opted_out_opts_out_what_it_wraps() -> None:
    text = DEPLOYMENT.replace(
        "  name: sample-deployment\n  labels:\n    kueue",
        "  name: sample-deployment\n  annotations: {kmultiarch.dev/skip: 'true'}\n"
        "  labels:\n    kueue",
        1,
    )
    deployment, _ = _run(text)
    assert "tolerations" not in deployment["spec"]["template"]["spec"]  # type: ignore[index]
