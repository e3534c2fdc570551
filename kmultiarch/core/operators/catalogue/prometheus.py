"""Prometheus Operator (prometheus-operator/prometheus-operator): Prometheus, Alertmanager,
ThanosRuler and PrometheusAgent, placed by their spec; images as pkg/operator/image.go
BuildImagePath computes them."""

from __future__ import annotations

from kmultiarch.core.operators.catalogue.common import optional_image
from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


def _build_image_path(
    spec: str, default_base: str, version: str, deprecated: bool
) -> tuple[str, ...]:
    """prometheus-operator pkg/operator/image.go BuildImagePath as templates: a base image
    (``baseImage``) that carries a tag or a digest as it is; else the base image (``baseImage``,
    else the operator's) with ``sha``, else ``tag``, else the version."""
    bases = ("{" + spec + "/baseImage|untagged}", default_base) if deprecated else (default_base,)
    templates: list[str] = []
    if deprecated:
        templates.append("{" + spec + "/baseImage|tagged}")  # "Return as-is if ... fully defined"
        templates += [base + "@sha256:{" + spec + "/sha}" for base in bases]
        templates += [base + ":{" + spec + "/tag}" for base in bases]
    templates += [base + ":" + version for base in bases]
    return tuple(templates)


_MONITORING_EXTRAS = (
    optional_image("/spec/containers/*/image"),
    optional_image("/spec/initContainers/*/image"),
)


def _monitoring(kind: str, *images: ImageSource, cites: str) -> OperatorKind:
    return OperatorKind(
        "monitoring.coreos.com",
        kind,
        (Placement(_p("/spec"), (*images, *_MONITORING_EXTRAS), cites=cites),),
        cites=f"{kind}.spec.{{affinity,tolerations,nodeSelector,image,containers,initContainers}}",
        adds="the config-reloader sidecar (the operator's --prometheus-config-reloader image)",
    )


_PROMETHEUS_OPERATOR = "prometheus-operator/prometheus-operator "
#: The Prometheus main image: spec.image, else BuildImagePath(baseImage or quay.io/prometheus/
#: prometheus, "v" + the semver of spec.version, tag, sha).
_PROMETHEUS_IMAGE = ImageSource(
    (_p("/spec/image"),),
    templates=_build_image_path(
        "/spec", "quay.io/prometheus/prometheus", "{/spec/version|v}", True
    ),
)
#: The Thanos sidecar spec.thanos adds: thanos.image, else BuildImagePath(thanos.baseImage or
#: quay.io/thanos/thanos, thanos.version (the operator's default when unset), tag, sha).
_THANOS_SIDECAR = ImageSource(
    (_p("/spec/thanos/image"),),
    templates=_build_image_path(
        "/spec/thanos", "quay.io/thanos/thanos", "{/spec/thanos/version}", True
    ),
    when=((_p("/spec/thanos"), ()),),
)


ENTRIES: tuple[OperatorKind, ...] = (
    # Prometheus Operator: the pod follows the resource's spec.
    _monitoring(
        "Prometheus",
        _PROMETHEUS_IMAGE,
        _THANOS_SIDECAR,
        cites=_PROMETHEUS_OPERATOR + "pkg/prometheus/server/statefulset.go makeStatefulSetSpec "
        '(BuildImagePath(spec.image, spec.baseImage, "v"+version, spec.tag, spec.sha)), '
        "createThanosContainer (spec.thanos: the Thanos sidecar); pkg/operator/image.go "
        "BuildImagePath (a base image with a tag or digest as it is; else sha before tag before "
        "version)",
    ),
    _monitoring(
        "Alertmanager",
        ImageSource(
            (_p("/spec/image"),),
            templates=_build_image_path(
                "/spec", "quay.io/prometheus/alertmanager", "{/spec/version}", True
            ),
        ),
        cites=_PROMETHEUS_OPERATOR + "pkg/alertmanager/statefulset.go makeStatefulSetSpec "
        "(BuildImagePath(spec.image, spec.baseImage, spec.version, spec.tag, spec.sha))",
    ),
    _monitoring(
        "ThanosRuler",
        ImageSource(
            (_p("/spec/image"),),
            templates=_build_image_path("/spec", "quay.io/thanos/thanos", "{/spec/version}", False),
        ),
        cites=_PROMETHEUS_OPERATOR + "pkg/thanos/statefulset.go makeStatefulSetSpec "
        "(BuildImagePath(spec.image, the operator's base, spec.version, '', ''))",
    ),
    _monitoring(
        "PrometheusAgent",
        ImageSource(
            (_p("/spec/image"),),
            templates=_build_image_path(
                "/spec", "quay.io/prometheus/prometheus", "{/spec/version|v}", False
            ),
        ),
        cites=_PROMETHEUS_OPERATOR + "pkg/prometheus/agent/statefulset.go "
        '(BuildImagePathForAgent(spec.image, the operator\'s base, "v"+version))',
    ),
)
