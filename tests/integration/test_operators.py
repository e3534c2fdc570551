"""Operators' custom resources in the real-world corpus (issue 23): what kmultiarch writes into a
custom resource is valid against the CRD its operator installs. ``tests/corpus/corpus2`` carries
the CRDs of ECK, Strimzi and MinIO: every resource that validates against its CRD's
``openAPIV3Schema`` before mutation validates after it, with unknown fields refused as the API
server prunes them (a structural schema), so nothing is written where the operator's API has no
field. The golden case tests/golden/operators (one resource of each catalogue kind) is checked
the same way."""

from __future__ import annotations

import collections
import copy
import functools
from pathlib import Path

import jsonschema
import pytest
import yaml
from support.corpus import CLUSTERS, corpus_files

from kmultiarch.api import mutate_text
from kmultiarch.core.operators.catalogue import CATALOGUE
from kmultiarch.core.policy.model import Policy

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "operators"


def _structural(schema: object) -> object:
    """A CRD schema as the API server applies it: an object schema with properties refuses
    other fields (pruned) unless it preserves unknown fields; int-or-string and nullable as
    Kubernetes reads them."""
    if isinstance(schema, list):
        return [_structural(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted = {key: _structural(value) for key, value in schema.items()}
    if converted.pop("x-kubernetes-int-or-string", False):
        converted.pop("type", None)
        converted["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if converted.pop("nullable", False) and "type" in converted:
        converted["type"] = [converted["type"], "null"]
    preserve = converted.pop("x-kubernetes-preserve-unknown-fields", False)
    if "properties" in converted and "additionalProperties" not in converted and not preserve:
        converted["additionalProperties"] = False
    for key in list(converted):
        if key.startswith("x-kubernetes-"):
            converted.pop(key)
    return converted


@functools.cache
def _validators() -> dict[tuple[str, str, str], jsonschema.Draft7Validator]:
    """(API group, version, kind) -> a validator, from every CRD of corpus2."""
    found = {}
    for path in corpus_files("corpus2"):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                continue
            spec = document["spec"]
            for version in spec.get("versions", []):
                schema = (version.get("schema") or {}).get("openAPIV3Schema")
                if schema:
                    structural = copy.deepcopy(_structural(schema))
                    assert isinstance(structural, dict)
                    # metadata is the API server's; the CRD schema leaves it open.
                    structural.setdefault("properties", {})["metadata"] = {"type": "object"}
                    found[(spec["group"], version["name"], spec["names"]["kind"])] = (
                        jsonschema.Draft7Validator(structural)
                    )
    return found


def _validator_for(resource: object) -> jsonschema.Draft7Validator | None:
    if not isinstance(resource, dict) or not isinstance(resource.get("apiVersion"), str):
        return None
    group, _, version = resource["apiVersion"].rpartition("/")
    return _validators().get((group, version, str(resource.get("kind"))))


def _valid(validator: jsonschema.Draft7Validator, resource: object) -> bool:
    return not any(True for _ in validator.iter_errors(resource))


def _check(text: str, cluster: str, counts: collections.Counter[str]) -> None:
    before = list(yaml.safe_load_all(text))
    result = mutate_text(text, Policy(), resolve=CLUSTERS[cluster])
    after = list(yaml.safe_load_all(result.stream()))
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        validator = _validator_for(old)
        if validator is None or not _valid(validator, old):
            continue
        counts["validated"] += 1
        if old != new:
            counts["changed and validated"] += 1
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(new)]
        assert not errors, (old.get("kind"), old.get("metadata", {}).get("name"), errors[:3])


def test_the_corpus_carries_the_crds_of_eck_strimzi_and_minio() -> None:
    kinds = {kind for _, _, kind in _validators()}
    assert {"Elasticsearch", "Kibana", "Kafka", "KafkaNodePool", "Tenant"} <= kinds


@pytest.mark.parametrize("cluster", list(CLUSTERS))
def test_mutated_custom_resources_of_the_corpus_still_validate_against_their_crds(
    cluster: str,
) -> None:
    counts: collections.Counter[str] = collections.Counter()
    for path in corpus_files("corpus2"):
        if "duplicate" in path.name:
            continue
        _check(path.read_text(encoding="utf-8"), cluster, counts)
    # Not vacuous: hundreds of resources validated, and (the ECK resources with a version get
    # the operator's default image) dozens of them changed.
    assert counts["validated"] > 150, counts
    assert counts["changed and validated"] > 40, counts


@pytest.mark.parametrize("cluster", list(CLUSTERS))
def test_the_operators_golden_case_validates_against_the_crds(cluster: str) -> None:
    counts: collections.Counter[str] = collections.Counter()
    _check((GOLDEN / "input.yaml").read_text(), cluster, counts)
    assert counts["changed and validated"] >= 10, counts


def test_every_catalogue_kind_in_the_corpus_is_counted_and_decided() -> None:
    """No operator kind of corpus2 is passed over: each resource of a catalogue kind gives at
    least one pod spec (a placement) in the run's pods, and in the mixed cluster each kind has
    a decision (a change, or the operator-chooses warning), never silence."""
    catalogue = {(entry.group, entry.kind) for entry in CATALOGUE}
    resources: collections.Counter[str] = collections.Counter()
    statuses: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for path in corpus_files("corpus2"):
        if "duplicate" in path.name:
            continue
        text = path.read_text(encoding="utf-8")
        for document in yaml.safe_load_all(text):
            if isinstance(document, dict) and isinstance(document.get("apiVersion"), str):
                group = document["apiVersion"].rpartition("/")[0]
                if (group, document.get("kind")) in catalogue:
                    resources[document["kind"]] += 1
        for pod in mutate_text(text, Policy(), resolve=CLUSTERS["mixed"]).pods:
            statuses[pod.workload.kind][pod.status] += 1
    assert len(resources) >= 30, resources  # the kinds issue 23 lists, found in the corpus
    for kind, count in resources.items():
        decided = statuses[kind]
        assert sum(decided.values()) >= count, (kind, count, dict(decided))
        assert decided["needs-change"] + decided["chosen-by-operator"] > 0, (kind, dict(decided))
