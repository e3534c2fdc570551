"""Crunchy PGO's PostgresCluster (issue 39, item 2), from the operator's own sample
(tests/fixtures/operators/crunchy-postgrescluster.yaml: CrunchyData/postgres-operator
examples/postgrescluster/postgrescluster.yaml, commit
0fbac3062d649b2b5fadde4e00f17bad250c0052). The kind was unknown: an unknown-pod-kind warning
and nothing written."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.operators import ARCH_IN_AMD64, ARM64_TOLERATION, resolve

from kmultiarch.api import mutate_text
from kmultiarch.core.findings import IMAGE_CHOSEN_BY_OPERATOR
from kmultiarch.engine import EngineResult

SAMPLE = (
    (Path(__file__).resolve().parents[1] / "fixtures" / "operators")
    .joinpath("crunchy-postgrescluster.yaml")
    .read_text(encoding="utf-8")
)


def _named(
    postgres: str = "registry.test/crunchy-postgres:ubi9-18.1",
    pgbackrest: str = "registry.test/crunchy-pgbackrest:ubi9-2.56",
    pgbouncer: str = "registry.test/crunchy-pgbouncer:ubi9-1.24",
    text: str = SAMPLE,
) -> str:
    """The sample with its images named (the published one leaves them to the operator's
    RELATED_IMAGE_* environment)."""
    return (
        text.replace("  postgresVersion: 18\n", f"  postgresVersion: 18\n  image: {postgres}\n")
        .replace("    pgbackrest:\n", f"    pgbackrest:\n      image: {pgbackrest}\n")
        .replace("pgBouncer: {}", f"pgBouncer: {{image: {pgbouncer}}}")
    )


def _run(text: str) -> tuple[dict[str, object], EngineResult]:
    result = mutate_text(text, resolve=resolve)
    (cluster,) = yaml.safe_load_all(result.stream())
    return cluster["spec"], result


def test_a_postgrescluster_places_its_instances_pgbouncer_repo_host_and_backup_jobs() -> None:
    """instance.go generateInstanceStatefulSetIntent, pgbouncer.go
    generatePGBouncerDeployment, pgbackrest.go generateRepoHostIntent and
    generateBackupJobSpecIntent: each pod takes its own object's affinity and tolerations; the
    repo host's and the jobs' objects are created under spec.backups.pgbackrest."""
    spec, result = _run(_named())
    (instance,) = spec["instances"]  # type: ignore[index]
    assert instance["tolerations"] == [ARM64_TOLERATION]
    assert spec["proxy"]["pgBouncer"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]
    pgbackrest = spec["backups"]["pgbackrest"]  # type: ignore[index]
    assert pgbackrest["repoHost"] == {"tolerations": [ARM64_TOLERATION]}
    assert pgbackrest["jobs"] == {"tolerations": [ARM64_TOLERATION]}
    assert result.findings == []


def test_an_amd64_only_pgbackrest_constrains_every_pod_that_runs_it() -> None:
    """pgBackRest runs beside Postgres in the instances (AddServerToInstancePod), in the repo
    host and in the backup Jobs; PgBouncer's pods do not run it."""
    spec, _ = _run(_named(pgbackrest="registry.test/crunchy-pgbackrest-amd64:ubi9-2.56"))
    (instance,) = spec["instances"]  # type: ignore[index]
    assert instance["affinity"] == ARCH_IN_AMD64 and "tolerations" not in instance
    pgbackrest = spec["backups"]["pgbackrest"]  # type: ignore[index]
    assert pgbackrest["repoHost"] == {"affinity": ARCH_IN_AMD64}
    assert pgbackrest["jobs"] == {"affinity": ARCH_IN_AMD64}
    assert spec["proxy"]["pgBouncer"]["tolerations"] == [ARM64_TOLERATION]  # type: ignore[index]


def test_the_published_sample_leaves_its_images_to_the_operator() -> None:
    """config.go: no spec.image, no pgbackrest or pgbouncer image: the operator's
    RELATED_IMAGE_* environment chooses them; the pods are said, not constrained."""
    spec, result = _run(SAMPLE)
    assert spec == yaml.safe_load(SAMPLE)["spec"]
    assert {f.rule for f in result.findings} == {IMAGE_CHOSEN_BY_OPERATOR}
    assert any("spec.image" in f.message for f in result.findings)


def test_no_repo_host_without_a_repo_volume() -> None:
    """reconcileDedicatedRepoHost: only when a repo has a volume (RepoHostVolumeDefined);
    cloud repos are written to by the instances' own pgBackRest."""
    text = _named().replace(
        "      - name: repo1\n        volume:\n          volumeClaimSpec:\n"
        '            accessModes:\n            - "ReadWriteOnce"\n            resources:\n'
        "              requests:\n                storage: 1Gi\n"
        "      - name: repo2\n        volume:\n          volumeClaimSpec:\n"
        '            accessModes:\n            - "ReadWriteOnce"\n            resources:\n'
        "              requests:\n                storage: 1Gi\n",
        "      - {name: repo1, s3: {bucket: b, endpoint: e, region: r}}\n",
    )
    spec, _ = _run(text)
    pgbackrest = spec["backups"]["pgbackrest"]  # type: ignore[index]
    assert "repoHost" not in pgbackrest
    assert pgbackrest["jobs"] == {"tolerations": [ARM64_TOLERATION]}


def test_without_backups_the_instances_run_no_pgbackrest() -> None:
    """reconcileInstance adds pgBackRest's sidecar only when spec.backups is specified."""
    named = _named(pgbackrest="registry.test/crunchy-pgbackrest-amd64:ubi9-2.56")
    document = yaml.safe_load(named.split("\n", 2)[2])
    del document["spec"]["backups"]
    spec, result = _run(yaml.safe_dump(document, sort_keys=False))
    (instance,) = spec["instances"]  # type: ignore[index]
    assert instance["tolerations"] == [ARM64_TOLERATION]
    assert "registry.test/crunchy-pgbackrest-amd64:ubi9-2.56" not in {
        str(reference) for reference in result.resolutions
    }


def test_a_restore_job_runs_postgres_where_its_data_source_places_it() -> None:
    """pgbackrest.go generateRestoreJobIntent: the restore Job runs PostgresContainerImage,
    placed by spec.backups.pgbackrest.restore when enabled."""
    text = _named(postgres="registry.test/crunchy-postgres-amd64:ubi9-18.1").replace(
        "    pgbackrest:\n",
        "    pgbackrest:\n      restore: {enabled: true, repoName: repo1}\n",
    )
    spec, _ = _run(text)
    restore = spec["backups"]["pgbackrest"]["restore"]  # type: ignore[index]
    assert restore["affinity"] == ARCH_IN_AMD64
