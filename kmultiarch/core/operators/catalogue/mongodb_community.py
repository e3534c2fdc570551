"""MongoDB Community operator (mongodb/mongodb-kubernetes-operator)."""

from __future__ import annotations

from kmultiarch.core.operators.model import ImageSource, OperatorKind, Placement, _p

__all__ = ["ENTRIES"]


ENTRIES: tuple[OperatorKind, ...] = (
    # MongoDB Community operator: spec.statefulSet.spec is merged over the StatefulSet the
    # operator builds (its pod template's placement kept); mongod, the agent and the init
    # containers run images of the operator's environment.
    OperatorKind(
        "mongodbcommunity.mongodb.com",
        "MongoDBCommunity",
        (
            Placement(
                _p("/spec/statefulSet/spec/template/spec"),
                (
                    ImageSource(
                        (),
                        operator_only="mongod (the operator's MONGODB_REPO_URL/MONGODB_IMAGE "
                        "for spec.version)",
                    ),
                    ImageSource(
                        (),
                        operator_only="the mongodb-agent and its init containers (the "
                        "operator's AGENT_IMAGE, VERSION_UPGRADE_HOOK_IMAGE, "
                        "READINESS_PROBE_IMAGE)",
                    ),
                ),
                creates=4,
                pod_spec=True,
                cites="mongodb/mongodb-kubernetes-operator controllers/replica_set_controller.go "
                "(statefulset.WithCustomSpecs(spec.statefulSet.spec): merged over the "
                "operator's; getMongoDBImage(repoUrl, mongodbImage, type, spec.version)); "
                "controllers/construct/mongodbstatefulset.go "
                "BuildMongoDBReplicaSetStatefulSetModificationFunction (mongodbImage, "
                "agentImage, versionUpgradeHookImage, readinessProbeImage from the operator's "
                "MONGODB_IMAGE, AGENT_IMAGE... environment); api/v1/mongodbcommunity_types.go "
                "StatefulSetConfiguration",
            ),
        ),
        cites="MongoDBCommunity.spec.statefulSet.spec.template (merged over the operator's "
        "StatefulSet)",
        adds="mongod, the mongodb-agent, the version upgrade hook and readiness probe (the "
        "operator's images: declare them as defaultImages)",
    ),
)
