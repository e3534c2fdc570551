"""Altinity clickhouse-operator (Altinity/clickhouse-operator): pod templates by name."""

from __future__ import annotations

from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_ALTINITY = "Altinity/clickhouse-operator "


def _altinity(group: str, kind: str, default_image: str, model: str, in_use: str) -> OperatorKind:
    """A ClickHouse (or Keeper) installation: the spec of each podTemplates[] item some host
    runs (the last of a name; created when the template has none) is the pod spec of those
    hosts; its app container, when the template has none, runs the operator's default image."""
    path = "/spec/templates/podTemplates/*/spec"
    return OperatorKind(
        group,
        kind,
        (
            Placement(
                _p(path),
                (ImageSource((_p(f"{path}/containers/*/image"),), templates=(default_image,)),),
                pod_spec=True,
                # A template with no spec (a name only) is an empty pod spec to the operator.
                creates=1,
                # Which templates the hosts run, and the clickhouse-log container a host with
                # a log volume claim template gets: core/operators/clickhousehosts.py.
                items_in_use=in_use,
                # A template's zone (zone.values) adds a node selector term the operator
                # appends to the template's own (an OR): an arch term written in the template
                # would not hold for it, so none is written (tolerations are), and pods that
                # need one are warned about.
                added_terms_when=((_p("/spec/templates/podTemplates/*/zone/values/*"), ()),),
                cites=_ALTINITY + "pkg/apis/clickhouse.altinity.com/v1/type_templates.go "
                "PodTemplate.Spec (a core PodSpec); the template a host runs: its own, its "
                "shard's or replica's, its cluster's, spec.defaults', its host template's "
                "(Cluster, ChiShard, ChiReplica, Host InheritTemplatesFrom, TemplatesList "
                "mergeFromFillEmptyValues; pkg/model/" + model + "/normalizer/normalizer.go "
                "normalizePodTemplate: PodTemplatesIndex.Set, the last of a name); "
                "pkg/model/common/creator/stateful-set-application.go stsSetupLogContainer "
                "(clickhouse-log, DefaultUbiDockerImage, for a host with a "
                "logVolumeClaimTemplate); pkg/model/common/normalizer/templates/"
                "pod.go NormalizePodTemplate (Spec.Affinity = affinity.Merge(the template's, "
                "Make(template)): zone.values add a nodeSelectorTerm, appended, "
                "affinity/node-affinity.go mergeNodeAffinity); pkg/model/" + model + "/creator/"
                "container.go EnsureAppContainer, NewDefaultAppContainer (the default image "
                "when the template has no app container: pkg/model/" + model + "/config/"
                "const.go)",
            ),
        ),
        cites=f"{kind}.spec.templates.podTemplates[].spec (PodSpecs), zone",
        adds=f"{default_image} when a template names no app container; pods of hosts naming "
        "no pod template run that image, placed by nothing kmultiarch writes"
        + (
            "; the clickhouse-log container (ubi-minimal) of hosts with a log volume claim template"
            if in_use == "clickhouse"
            else ""
        ),
    )


ENTRIES: tuple[OperatorKind, ...] = (
    # Altinity clickhouse-operator: pod templates by name.
    _altinity(
        "clickhouse.altinity.com",
        "ClickHouseInstallation",
        "clickhouse/clickhouse-server:latest",
        "chi",
        "clickhouse",
    ),
    _altinity(
        "clickhouse-keeper.altinity.com",
        "ClickHouseKeeperInstallation",
        "clickhouse/clickhouse-keeper:latest",
        "chk",
        "clickhouse-keeper",
    ),
)
