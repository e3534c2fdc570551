"""Hostile and broken input (issue 7, item 2): ``kmultiarch mutate`` on files built to hurt it.

Each input must end with exit 2 and one line ``kmultiarch: error: FILE:LINE: reason``, within a
bounded time and memory (the child's peak RSS, from ``os.wait4``), with nothing on stdout and
nothing executed. JSON, CRLF line endings and a UTF-8 byte order mark are listed among the
hostile inputs in the issue, but they are valid YAML that kubectl accepts: they are processed,
and the tests at the end prove the output is right.

No registry is contacted: policy ``overrides`` declare the platforms of ``registry.test``
images, so the valid inputs are decided without a network.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from support.cli import clean_env
from support.measure import Measured, run_measured

MB = 1024 * 1024
#: Time any of these inputs may take, start-up included, on a loaded CI machine.
TIME_BOUND = 15.0
#: Peak memory allowed: the interpreter (about 30 MB) plus a few times the input.
BASE_RSS = 100 * MB
RSS_PER_INPUT_BYTE = 3
DEPTH = 100_000

POLICY = """\
apiVersion: kmultiarch.dev/v1alpha1
kind: MultiArchPolicy
metadata: {name: offline}
spec:
  overrides:
  - {image: "registry.test/*", platforms: [linux/amd64, linux/arm64]}
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: main
        image: registry.test/app:1.0
"""
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n"


def _billion_laughs() -> bytes:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefghi", "bcdefghij", strict=True):
        lines.append(f"{name}: &{name} [{','.join([f'*{previous}'] * 9)}]")
    return ("\n".join(lines) + "\n").encode()


def _libyaml_stops_deep_block_mappings_a_line_early() -> bool:
    """libyaml 0.2.6 (in PyYAML 6.0.3's wheels and later) has a nesting limit of its own: it
    stops a block mapping nested 1001 deep where the key of the 1000th level opens, a line
    before the 1001st. Older libyaml lets kmultiarch count the levels itself."""
    text = "".join(" " * i + "a:\n" for i in range(1100))
    try:
        for _ in yaml.parse(text, Loader=yaml.CSafeLoader):
            pass
    except yaml.MarkedYAMLError:
        return True
    return False


def _deep_block_mapping(levels: int) -> bytes:
    # One space more per level: 100k levels would take 5 GB, so 3000 (4.5 MB) stand for them.
    return ("".join(" " * i + "a:\n" for i in range(levels)) + " " * levels + "b\n").encode()


def _config_map_with(value: str) -> bytes:
    return (
        f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  key: {value}\n".encode()
    )


@dataclass(frozen=True)
class Hostile:
    id: str
    content: Callable[[Path], bytes]
    #: The line the error must name, and words of its reason.
    line: int
    reason: str


def _marker(tmp_path: Path) -> Path:
    return tmp_path / "executed"


HOSTILE = [
    Hostile(
        "billion-laughs",
        lambda _: _billion_laughs(),
        1,
        "aliases expand to more than 1000000 nodes",
    ),
    Hostile(
        "self-referencing-alias",
        lambda _: b"a: &a [*a, *a]\n",
        1,
        "an alias refers to a collection that contains it (a cycle)",
    ),
    Hostile(
        "deep-flow-100k",
        lambda _: b"a: " + b"[" * DEPTH + b"]" * DEPTH + b"\n",
        1,
        "nesting deeper than 1000 levels",
    ),
    Hostile(
        "deep-flow-mappings-100k",
        lambda _: b'{"a": ' * DEPTH + b"1" + b"}" * DEPTH + b"\n",
        1,
        "nesting deeper than 1000 levels",
    ),
    Hostile(
        "deep-block-sequences-100k",
        lambda _: b"- " * DEPTH + b"x\n",
        1,
        "nesting deeper than 1000 levels",
    ),
    Hostile(
        "deep-block-keys-100k",
        lambda _: b"? " * DEPTH + b"x\n",
        1,
        "nesting deeper than 1000 levels",
    ),
    Hostile(
        "deep-block-mapping-3000",
        lambda _: _deep_block_mapping(3000),
        1000 if _libyaml_stops_deep_block_mappings_a_line_early() else 1001,
        "nesting deeper than 1000 levels",
    ),
    Hostile(
        "50-MB-document",
        lambda _: _config_map_with('"' + "x" * (50 * MB) + '"'),
        1,
        "more than the 8388608 accepted",
    ),
    Hostile(
        "duplicate-keys",
        lambda _: DEPLOYMENT.replace("  name: web\n", "  name: a\n  name: b\n").encode(),
        5,
        "duplicate key 'name' in a mapping",
    ),
    Hostile(
        "python-object-apply",
        lambda tmp: _config_map_with(f"!!python/object/apply:os.system ['touch {_marker(tmp)}']"),
        6,
        "the tag !!python/object/apply:os.system is not supported",
    ),
    Hostile(
        "python-object-new",
        lambda tmp: _config_map_with(
            f"!!python/object/new:subprocess.Popen [[touch, {_marker(tmp)}]]"
        ),
        6,
        "the tag !!python/object/new:subprocess.Popen is not supported",
    ),
    Hostile(
        "python-name",
        lambda _: _config_map_with("!!python/name:os.system ''"),
        6,
        "the tag !!python/name:os.system is not supported",
    ),
    Hostile(
        "local-tag",
        lambda _: _config_map_with("!Ref {a: b}"),
        6,
        "the tag !Ref is not supported",
    ),
    Hostile(
        "set-tag",
        lambda _: _config_map_with("!!set {a, b}"),
        6,
        "the tag !!set is not supported",
    ),
    Hostile(
        "invalid-utf8",
        lambda _: b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \xff\xfe}\n",
        3,
        "not valid UTF-8 (byte 0xff at offset 48)",
    ),
    Hostile(
        "binary-garbage",
        lambda _: random.Random(7).randbytes(64 * 1024),
        1,
        "not valid UTF-8",
    ),
    Hostile(
        "nul-byte",
        lambda _: b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a\x00b}\n",
        3,
        "control character U+0000 is not allowed in YAML",
    ),
    Hostile(
        "utf-16",
        lambda _: CONFIG_MAP.encode("utf-16"),
        1,
        "the file is UTF-16 encoded",
    ),
    Hostile(
        "truncated-quoted-scalar",
        lambda _: b'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: "unterminated\n',
        5,
        "invalid YAML: while scanning a quoted scalar found unexpected end of stream",
    ),
    Hostile(
        "truncated-flow-collection",
        lambda _: DEPLOYMENT.encode() + b"      tolerations: [{key: a, operator: Exists}, {ke\n",
        12,
        "invalid YAML",
    ),
    # Two good documents first: nothing of them may reach stdout (kubectl apply --prune would
    # delete whatever a partial stream leaves out). The stream ends on line 20, inside the
    # open bracket: libyaml's mark, as for the truncated inputs above.
    Hostile(
        "third-document-broken",
        lambda _: (DEPLOYMENT + "---\n" + CONFIG_MAP + "---\nkind: [\n").encode(),
        20,
        "document 3: invalid YAML",
    ),
]


def _mutate(path: Path, tmp_path: Path, stdin: bytes | None = None) -> Measured:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    args = ["mutate", "--config", str(policy), "--no-cache"]
    return run_measured(
        [*args, str(path)] if stdin is None else args, env=clean_env(tmp_path), stdin=stdin
    )


@pytest.mark.parametrize("hostile", HOSTILE, ids=[case.id for case in HOSTILE])
def test_hostile_input_is_refused_with_file_line_and_reason(
    hostile: Hostile, tmp_path: Path
) -> None:
    path = tmp_path / f"{hostile.id}.yaml"
    content = hostile.content(tmp_path)
    path.write_bytes(content)
    run = _mutate(path, tmp_path)
    assert run.returncode == 2, run.stderr
    assert run.stdout == b""
    assert run.stderr_lines == [run.stderr_lines[0]], "one line"
    message = run.stderr_lines[0]
    assert message.startswith(f"kmultiarch: error: {path}:{hostile.line}: "), message
    assert hostile.reason in message, message
    assert run.elapsed < TIME_BOUND, f"{run.elapsed:.1f} s"
    assert run.max_rss < BASE_RSS + RSS_PER_INPUT_BYTE * len(content), f"{run.max_rss / MB:.0f} MB"
    assert not _marker(tmp_path).exists(), "a tag ran code"


@pytest.mark.parametrize(
    "document",
    [
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
        'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: "unterminated\n',
    ],
    ids=["duplicate-keys", "truncated-quoted-scalar"],
)
def test_a_document_without_pod_templates_is_passed_through_unread(
    document: str, tmp_path: Path
) -> None:
    """kmultiarch does not compose documents whose text proves a kind without pod templates
    (issue 17): their YAML is the API server's to judge, and they come out byte for byte. Tags
    are still refused in every document (the cases above)."""
    path = tmp_path / "stream.yaml"
    path.write_text(DEPLOYMENT + "---\n" + document)
    run = _mutate(path, tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout.decode().endswith("---\n" + document)
    assert "tolerations:" in run.stdout.decode(), "the Deployment before it is handled"


def test_an_input_larger_than_the_cap_is_refused_before_it_is_all_read(tmp_path: Path) -> None:
    """300 MB (a sparse file: no disk used): refused after reading the 256 MB cap, not held
    whole in memory (a 10 GB file once took 19 GB of memory before the document cap fired)."""
    path = tmp_path / "huge.yaml"
    with path.open("wb") as stream:
        stream.truncate(300 * MB)
    run = _mutate(path, tmp_path)
    assert run.returncode == 2
    assert run.stdout == b""
    assert run.stderr == (
        f"kmultiarch: error: {path}:1: the input is larger than 268435456 bytes; this is not a "
        "rendered manifest stream, or split it\n"
    )
    assert run.elapsed < TIME_BOUND
    assert run.max_rss < 400 * MB, f"{run.max_rss / MB:.0f} MB"


def test_hostile_input_on_stdin_is_named_stdin(tmp_path: Path) -> None:
    run = _mutate(Path("-"), tmp_path, stdin=_billion_laughs())
    assert run.returncode == 2
    assert run.stdout == b""
    assert run.stderr.startswith("kmultiarch: error: <stdin>:1: document 1: aliases expand")


# -- valid inputs the issue lists among the hostile ones ---------------------------------------

EXPECTED_TOLERATION = {
    "key": "kubernetes.io/arch",
    "operator": "Equal",
    "value": "arm64",
    "effect": "NoSchedule",
}


def _expected_values() -> list[object]:
    deployment = yaml.safe_load(DEPLOYMENT)
    deployment["spec"]["template"]["spec"]["tolerations"] = [EXPECTED_TOLERATION]
    return [deployment, yaml.safe_load(CONFIG_MAP)]


def _run_valid(tmp_path: Path, content: bytes) -> Measured:
    path = tmp_path / "input.yaml"
    path.write_bytes(content)
    run = _mutate(path, tmp_path)
    assert run.returncode == 0, run.stderr
    assert "1 changed" in run.stderr
    return run


@pytest.fixture
def lf_output(tmp_path: Path) -> bytes:
    """What the plain LF, UTF-8 YAML stream gives: the reference for the variants."""
    run = _run_valid(tmp_path / "lf", (DEPLOYMENT + "---\n" + CONFIG_MAP).encode())
    assert list(yaml.safe_load_all(run.stdout)) == _expected_values()
    assert run.text.endswith("---\n" + CONFIG_MAP), "an unchanged document comes out as it was"
    return run.stdout


@pytest.fixture(autouse=True)
def _workdirs(tmp_path: Path) -> None:
    for name in ("lf", "variant"):
        (tmp_path / name).mkdir()


def test_json_documents_are_processed_and_stay_json(tmp_path: Path) -> None:
    documents = [yaml.safe_load(DEPLOYMENT), yaml.safe_load(CONFIG_MAP)]
    text = "---\n".join(json.dumps(document, indent=2) + "\n" for document in documents)
    run = _run_valid(tmp_path / "variant", text.encode())
    first, second = run.text.split("---\n")
    assert [json.loads(first), json.loads(second)] == _expected_values()
    assert second == json.dumps(documents[1], indent=2) + "\n"


def test_a_json_list_is_processed(tmp_path: Path) -> None:
    documents = [yaml.safe_load(DEPLOYMENT), yaml.safe_load(CONFIG_MAP)]
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": documents}, indent=2) + "\n"
    run = _run_valid(tmp_path / "variant", text.encode())
    assert json.loads(run.stdout)["items"] == _expected_values()


def test_crlf_line_endings_are_processed_and_kept(tmp_path: Path, lf_output: bytes) -> None:
    content = (DEPLOYMENT + "---\n" + CONFIG_MAP).replace("\n", "\r\n").encode()
    run = _run_valid(tmp_path / "variant", content)
    assert run.stdout.count(b"\n") == run.stdout.count(b"\r\n"), "every line ends in CRLF"
    assert run.stdout.replace(b"\r\n", b"\n") == lf_output


def test_a_byte_order_mark_is_accepted(tmp_path: Path, lf_output: bytes) -> None:
    run = _run_valid(
        tmp_path / "variant", b"\xef\xbb\xbf" + (DEPLOYMENT + "---\n" + CONFIG_MAP).encode()
    )
    assert run.stdout == lf_output


def test_bom_crlf_and_json_together(tmp_path: Path) -> None:
    text = json.dumps(yaml.safe_load(DEPLOYMENT), indent=2) + "\n"
    run = _run_valid(tmp_path / "variant", b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    assert run.stdout.count(b"\n") == run.stdout.count(b"\r\n")
    assert json.loads(run.stdout) == _expected_values()[0]
