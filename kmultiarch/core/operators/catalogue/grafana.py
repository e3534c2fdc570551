"""Grafana operator (grafana/grafana-operator): a Grafana's Deployment, spec.deployment merged
over the operator's own."""

from __future__ import annotations

from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]

_RECONCILER = "grafana/grafana-operator controllers/reconcilers/grafana/deployment_reconciler.go "
_POD_SPEC = "/spec/deployment/spec/template/spec"

#: The grafana container's image (getGrafanaImage): spec.version when it holds one of ":/@" (an
#: image), else docker.io/grafana/grafana:<spec.version>; the operator's own version when unset.
#: Not when spec.deployment's grafana container names an image: the override, merged by name
#: (containers: patchMergeKey name), replaces it, and is judged with the pod spec's containers.
_GRAFANA_IMAGE = ImageSource(
    (),
    templates=("{/spec/version|reference}", "docker.io/grafana/grafana:{/spec/version|word}"),
    unless=((_p(f"{_POD_SPEC}/containers/*[name=grafana]/image"), ()),),
    operator_only="grafana (the operator's docker.io/grafana/grafana:<its GrafanaVersion>, "
    "when spec.version is not set)",
)


ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "grafana.integreatly.org",
        "Grafana",
        (
            Placement(
                _p(_POD_SPEC),
                (_GRAFANA_IMAGE,),
                # spec.deployment, its spec, template and spec, created when missing.
                creates=4,
                pod_spec=True,
                cites=_RECONCILER + "Reconcile (getDeploymentSpec, then v1beta1.Merge(deployment, "
                "spec.deployment): api/v1beta1/typeoverrides.go Merge, a strategic merge patch; "
                "the operator's pod spec sets no affinity, tolerations nor nodeSelector, so "
                "spec.deployment's are the pods'), getContainers, getGrafanaImage "
                '(strings.ContainsAny(spec.version, ":/@"): the version is the image)',
            ),
        ),
        cites="Grafana.spec.deployment.spec.template.spec (DeploymentV1PodSpec: affinity, "
        "tolerations, nodeSelector, containers, initContainers), spec.version",
        adds="the grafana container (docker.io/grafana/grafana of spec.version, else of the "
        "operator's own version) when spec.deployment's grafana container names no image",
    ),
)
