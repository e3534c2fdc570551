"""Streams libyaml reads are read by the commands too (issue 36): document ends (``...``)
followed by comments and empty documents, directives. What is not edited comes out byte for
byte. The cutter itself is compared with libyaml over generated streams in
tests/unit/test_yamlstream.py."""

from __future__ import annotations

from pathlib import Path

import yaml
from support import SeededRegistry
from support.cli import clean_env, run_kmultiarch
from support.manifests import deployment, image, write_policy

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "streams"
# Two docs examples of stackabletech/trino-operator as a shell loop concatenates them (the
# file's header says where they come from).
TRINO_DOCS = FIXTURES / "trino-operator-docs-examples.yaml"


def test_a_document_end_a_comment_and_two_document_starts_are_not_refused(
    tmp_path: Path,
) -> None:
    """``printf 'a: 1\\n...\\n# c\\n---\\n---\\n' | kmultiarch mutate`` exited 2 ("expected a
    single document in the stream"); PyYAML and ruamel read three documents."""
    text = "a: 1\n...\n# c\n---\n---\n"
    result = run_kmultiarch(["mutate"], env=clean_env(tmp_path), stdin=text, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == text


def test_the_trino_operator_docs_examples_are_read_and_kept_byte_for_byte(
    registry: SeededRegistry, tmp_path: Path
) -> None:
    """The docs examples of stackabletech/trino-operator, concatenated, were refused with
    exit 2; with a Deployment after them, mutate edits the Deployment and leaves every byte
    of the examples as it was."""
    examples = TRINO_DOCS.read_text(encoding="utf-8")
    assert len(list(yaml.compose_all(examples, Loader=yaml.CSafeLoader))) == 7
    manifest = tmp_path / "all.yaml"
    manifest.write_text(
        examples + "---\n" + deployment("web", [image(registry, "single-docker-amd64")]),
        encoding="utf-8",
    )
    policy = write_policy(tmp_path / "policy.yaml", registry)
    result = run_kmultiarch(
        ["mutate", "--config", str(policy), str(manifest)], env=clean_env(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(examples + "---\n")
    edited = list(yaml.safe_load_all(result.stdout))[-1]
    pod_spec = edited["spec"]["template"]["spec"]
    required = pod_spec["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert required["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
    ]
