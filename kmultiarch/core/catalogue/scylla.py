"""Scylla operator (scylladb/scylla-operator): a ScyllaCluster's racks, each a StatefulSet placed
by the rack's placement."""

from __future__ import annotations

from kmultiarch.core.operators import ImageSource, OperatorKind, Placement, _p

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
)
