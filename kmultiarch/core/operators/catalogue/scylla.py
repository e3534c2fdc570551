"""Scylla operator (scylladb/scylla-operator): a ScyllaCluster's racks, each a StatefulSet placed
by the rack's placement; a ScyllaDBCluster's datacenters, whose placements are appended level by
level."""

from __future__ import annotations

from kmultiarch.core.operators.model import Condition, ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


_SCYLLA = "scylladb/scylla-operator "
#: The operator's own image runs in every ScyllaDB pod (the init container copying its binary,
#: the sidecar: StatefulSetForRack's sidecarImage, its --image), and from ScyllaDB 2026.3 its
#: node exporter image (getScyllaDBNodeExporterContainer).
_OPERATOR = ImageSource(
    (),
    operator_only="the operator's own image (its init container and sidecar) and, from "
    "ScyllaDB 2026.3, its node exporter image",
)

_TOPOLOGY: tuple[Condition, ...] = (
    (_p("/spec/datacenterTemplate/topologyLabelSelector"), ()),
    (_p("/spec/datacenters/*/topologyLabelSelector"), ()),
)
#: (when, unless) of a ScyllaDBCluster datacenter's placement: created when missing unless a
#: topologyLabelSelector is set; else judged only (one case per selector, the first that holds).
_SCYLLADB_CLUSTER_CASES: tuple[tuple[tuple[Condition, ...], tuple[Condition, ...]], ...] = (
    ((), _TOPOLOGY),
    *(((condition,), ()) for condition in _TOPOLOGY),
)

ENTRIES: tuple[OperatorKind, ...] = (
    OperatorKind(
        "scylla.scylladb.com",
        "ScyllaCluster",
        (
            Placement(
                _p("/spec/datacenter/racks/*/placement"),
                (
                    # migrate.go: ScyllaDB.Image = repository:version (the CRD defaults the
                    # repository to docker.io/scylladb/scylla), the agent's
                    # agentRepository:agentVersion (docker.io/scylladb/scylla-manager-agent,
                    # latest).
                    ImageSource(
                        (),
                        templates=(
                            "{/spec/repository}:{/spec/version|tag}",
                            "docker.io/scylladb/scylla:{/spec/version|tag}",
                        ),
                    ),
                    ImageSource(
                        (),
                        templates=(
                            "{/spec/agentRepository}:{/spec/agentVersion|tag}",
                            "docker.io/scylladb/scylla-manager-agent:{/spec/agentVersion|tag}",
                            "{/spec/agentRepository}:latest",
                            "docker.io/scylladb/scylla-manager-agent:latest",
                        ),
                    ),
                    _OPERATOR,
                ),
                creates=1,
                shape="node-affinity",
                cites=_SCYLLA + "pkg/controller/scyllacluster/migrate.go "
                "MigrateV1ScyllaClusterToV1Alpha1ScyllaDBDatacenter (each rack's placement: "
                "nodeAffinity, podAffinity, podAntiAffinity, tolerations; no datacenter-wide "
                "one: RackTemplate nil; the images repository:version, "
                "agentRepository:agentVersion); pkg/controller/scylladbdatacenter/resource.go "
                "StatefulSetForRack (Affinity.NodeAffinity, Tolerations: the rack's placement "
                "alone), pkg/api/scylla/v1/types_cluster.go (the defaults of repository, "
                "agentRepository, agentVersion)",
            ),
        ),
        cites="ScyllaCluster.spec.datacenter.racks[].placement.{nodeAffinity,tolerations}, "
        "spec.{repository,version,agentRepository,agentVersion}",
        adds="the operator's own image in every pod (declare it as defaultImages)",
    ),
    # Each of spec.datacenters[] becomes a ScyllaDBDatacenter (in its remote Kubernetes
    # cluster) whose placement is datacenterTemplate.placement with the datacenter's appended.
    OperatorKind(
        "scylla.scylladb.com",
        "ScyllaDBCluster",
        tuple(
            Placement(
                _p("/spec/datacenters/*/placement"),
                (
                    # MakeRemoteScyllaDBDatacenters: ScyllaDB.Image spec.scyllaDB.image,
                    # the agent's spec.scyllaDBManagerAgent.image (unset: the
                    # ScyllaDBDatacenter's default, the operator's choice).
                    ImageSource((_p("/spec/scyllaDB/image"),)),
                    ImageSource((_p("/spec/scyllaDBManagerAgent/image"),)),
                    _OPERATOR,
                ),
                creates=1,
                shape="node-affinity",
                # mergeScyllaV1Alpha1Placement appends every level's required terms (the
                # datacenterTemplate's, its rackTemplate's, the datacenter's and its
                # rackTemplate's): ORed, so no arch term written at one level holds.
                writes_affinity=False,
                when=when,
                unless=unless,
                # A topologyLabelSelector becomes the datacenter's placement only while
                # neither level has one: a placement created for tolerations would drop
                # it, so none is created then (the pods are judged all the same).
                judged_only_when_missing=bool(when),
                cites=_SCYLLA + "pkg/controller/scylladbcluster/resource.go "
                "MakeRemoteScyllaDBDatacenters (ScyllaDB.Image: spec.scyllaDB.image; "
                "ScyllaDBManagerAgent.Image: spec.scyllaDBManagerAgent.image; "
                "RackTemplate, Racks: applyDatacenterTemplateOnDatacenter), "
                "applyDatacenterTemplateOnDatacenter (Placement: mergeScyllaV1Alpha1Placement "
                "of datacenterTemplate.placement and the datacenter's, else a term of the "
                "topologyLabelSelector; the rackTemplate's: the datacenterTemplate's, its "
                "rackTemplate's, the datacenter's and its rackTemplate's), "
                "mergeScyllaV1Alpha1Placement (required node selector terms and tolerations "
                "appended level by level)",
            )
            for when, unless in _SCYLLADB_CLUSTER_CASES
        ),
        cites="ScyllaDBCluster.spec.datacenters[].placement.{nodeAffinity,tolerations}, "
        "spec.{datacenterTemplate,datacenters[]}.topologyLabelSelector, "
        "spec.scyllaDB.image, spec.scyllaDBManagerAgent.image",
        adds="the operator's own image in every pod, the agent's default image when "
        "spec.scyllaDBManagerAgent.image is unset (declare them as defaultImages)",
    ),
)
