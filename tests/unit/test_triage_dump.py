"""Reading kubectl's dumps a Kubernetes object at a time (kmultiarch/io/clusterdump.py): JSON
and YAML alike, in chunks as small as a pipe gives them, within bounds whatever the size, and
every hostile input answered with a ClusterDumpError naming the file, never a crash."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kmultiarch.core.triage.diagnosis import failures
from kmultiarch.io import clusterdump
from kmultiarch.io.clusterdump import (
    MAX_LIST_NESTING,
    ClusterDumpError,
    DumpLimits,
    dump_items,
    read_cluster,
)

SHOP = Path(__file__).parents[1] / "fixtures" / "triage" / "shop"


def cluster() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SHOP / "cluster.json").read_text())
    return loaded


class Trickle(io.RawIOBase):
    """A stream that gives at most ``step`` bytes a read, as a slow pipe does."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data = data
        self._position = 0
        self._step = step

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        chunk = self._data[self._position : self._position + min(self._step, max(size, 1))]
        self._position += len(chunk)
        return chunk


def items(data: bytes, limits: DumpLimits | None = None) -> list[Any]:
    return list(dump_items(io.BytesIO(data), "dump.json", limits))


def test_json_and_yaml_dumps_give_the_same_objects() -> None:
    dump = cluster()
    from_json = items(json.dumps(dump, indent=4).encode())
    from_yaml = items(yaml.safe_dump(copy.deepcopy(dump), sort_keys=False).encode())
    assert from_json == from_yaml == dump["items"]


@pytest.mark.parametrize("step", [1, 7, 4096])
def test_a_dump_read_a_few_bytes_at_a_time_is_read_whole(step: int) -> None:
    dump = cluster()
    text = json.dumps(dump).encode()
    assert list(dump_items(Trickle(text, step), "pipe")) == dump["items"]  # type: ignore[arg-type]
    data = yaml.safe_dump(copy.deepcopy(dump)).encode()
    assert list(dump_items(Trickle(data, step), "pipe")) == dump["items"]  # type: ignore[arg-type]


def test_a_single_object_and_concatenated_objects() -> None:
    pod = cluster()["items"][0]
    assert items(json.dumps(pod).encode()) == [pod]
    assert items((json.dumps(pod) + "\n" + json.dumps(pod)).encode()) == [pod, pod]
    assert items(b"\xef\xbb\xbf" + json.dumps(pod).encode()) == [pod]  # a BOM
    stream = yaml.safe_dump_all([pod, copy.deepcopy(pod)]).encode()
    assert items(stream) == [pod, pod]


HOSTILE = [
    (b"", "dump.json: empty"),
    (b"   \n\t ", "dump.json: empty"),
    (b"hello", "dump.json:1: the document is a string, not a Kubernetes object or List"),
    (b"[1, 2]", "a JSON array; expected a Kubernetes object or List"),
    (b"- 1\n- 2\n", "the document is an array"),
    (b'{"apiVersion":"v1","kind":"List","items":[1]}', "item 1 of items is a number"),
    (b'{"apiVersion":"v1","kind":"List","items":[null]}', "item 1 of items is null"),
    (b'{"apiVersion":"v1","kind":"List","items":[{"a":1}]}', "item 1 of items has no apiVersion"),
    (b'{"apiVersion":"v1","kind":"Pod","items":[]}', "has items but is not a Kubernetes List"),
    (b'{"metadata": {}}', "the object has no apiVersion and kind"),
    (b'{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1"', "dump.json:1: not a kubectl"),
    (b'{"apiVersion": "v1", "items": [}', "not a kubectl JSON dump"),
    (b'{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod"} 7]}', "expected"),
    (b"{\n\n\xff}", "dump.json:3: not UTF-8"),
    (b"a: &x [1]\nb: *x\n", "a YAML alias"),
    (b"apiVersion: v1\nitems: [\n", "not JSON or YAML"),
    (b"apiVersion: v1\nkind: List\nitems:\n- 3\n", "item 1 of items is a number"),
    (b"? [a]\n: 1\n", "a key that is not a string"),
    (b'{"apiVersion":"v1","kind":"List","items":{}}', "a List whose items are an object"),
    (b"apiVersion: v1\nkind: List\nitems: 3\n", "dump.json:1: the document is a List whose"),
]


@pytest.mark.parametrize(("data", "expected"), HOSTILE)
def test_hostile_dumps_are_refused_with_the_file_named(data: bytes, expected: str) -> None:
    with pytest.raises(ClusterDumpError) as refused:
        items(data)
    assert expected in str(refused.value)
    assert str(refused.value).startswith("dump.json")


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize("depth", [150, 100_000])
def test_deep_json_is_refused(depth: int) -> None:
    data = (
        b'{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","x":'
        + nested(depth)
        + b"}]}"
    )
    with pytest.raises(ClusterDumpError, match="nests deeper than"):
        items(data)


def test_deep_yaml_is_refused() -> None:
    data = b"apiVersion: v1\nkind: List\nitems:\n- " + nested(500) + b"\n"
    with pytest.raises(ClusterDumpError, match="nests deeper than 100 levels"):
        items(data)


def test_an_object_larger_than_the_limit_is_refused_in_both_formats() -> None:
    big = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [{"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "a" * 5000}}],
    }
    limits = DumpLimits(max_object_bytes=4096)
    with pytest.raises(ClusterDumpError, match=r"larger than 4096 bytes \(--max-object-size\)"):
        items(json.dumps(big).encode(), limits)
    with pytest.raises(ClusterDumpError, match=r"larger than 4096 bytes \(--max-object-size\)"):
        items(yaml.safe_dump(big).encode(), limits)
    # An unterminated string runs to the limit, not to the end of the input.
    endless = b'{"apiVersion":"v1","kind":"List","items":[{"a":"' + b"b" * 200_000
    with pytest.raises(ClusterDumpError, match="larger than 4096"):
        items(endless, limits)


def write(tmp_path: Path, name: str, document: object) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def pod_list(*pods: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "List", "items": list(pods)}


WRONG_TYPES = [
    ({"apiVersion": "v1", "kind": "Pod", "metadata": "x"}, "Pod: metadata is not an object"),
    (
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": "x"}},
        "Pod /p: spec.containers is not a list",
    ),
    (
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n"},
            "spec": {"containers": [{"name": "c", "image": 7}]},
        },
        "Pod n/p: spec.containers[0].image is not a string",
    ),
    (
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "n"},
            "status": {"containerStatuses": [{"name": "c", "state": {"waiting": []}}]},
        },
        "status.containerStatuses[0].state.waiting is not an object",
    ),
    (
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {"taints": {}}},
        "Node n: spec.taints is not a list",
    ),
    (
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {"name": "r", "ownerReferences": [{"kind": 3}]},
        },
        "ReplicaSet r: metadata.ownerReferences[0].kind is not a string",
    ),
    (
        {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "e"},
            "reason": "FailedScheduling",
            "regarding": "pod",
        },
        "regarding is not an object",
    ),
]


@pytest.mark.parametrize(("item", "expected"), WRONG_TYPES)
def test_fields_of_the_wrong_type_are_refused(
    tmp_path: Path, item: dict[str, object], expected: str
) -> None:
    name = write(tmp_path, "dump.json", pod_list(item))
    with pytest.raises(ClusterDumpError) as refused:
        read_cluster([name])
    message = str(refused.value)
    assert message.startswith(f"{name}: object 1: ")
    assert expected in message


def test_what_is_kept_is_capped(tmp_path: Path) -> None:
    nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i}"}} for i in range(5)]
    name = write(tmp_path, "nodes.json", pod_list(*nodes))
    assert len(read_cluster([name], DumpLimits(max_kept=5)).nodes) == 5
    with pytest.raises(ClusterDumpError, match=r"more than 4 objects to keep.*--max-objects"):
        read_cluster([name], DumpLimits(max_kept=4))


def test_several_dumps_and_stdin(tmp_path: Path) -> None:
    dump = cluster()
    pods = [item for item in dump["items"] if item["kind"] == "Pod"]
    rest = [item for item in dump["items"] if item["kind"] != "Pod"]
    first = write(tmp_path, "pods.json", pod_list(*pods))
    stdin = io.BytesIO(yaml.safe_dump(pod_list(*copy.deepcopy(rest))).encode())
    state = read_cluster([first, "-"], stdin=stdin)
    assert len(state.pods) == 5  # the running pod is not kept
    assert sorted(state.nodes) == ["amd-1", "arm-1"]
    assert {event.source for event in state.events} == {"<stdin>"}
    assert state.seen == len(dump["items"])


def test_a_directory_and_a_missing_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ClusterDumpError, match="/dev/null: not a regular file"):
        read_cluster(["/dev/null"])
    with pytest.raises(ClusterDumpError, match="cannot read"):
        read_cluster([str(tmp_path)])
    with pytest.raises(ClusterDumpError, match="cannot read"):
        read_cluster([str(tmp_path / "absent.json")])


def running_pod(index: int, typed: bool = True) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"web-{index}", "namespace": "shop", "uid": f"u{index}"},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
        "status": {"phase": "Running", "message": "x" * 400},
    }
    if not typed:  # an item of the API server's typed list (PodList)
        del pod["apiVersion"], pod["kind"]
    return pod


def generated_list(count: int, typed: bool = True, pending_every: int = 0) -> Iterator[bytes]:
    """``kubectl get pods -A -o json`` of ``count`` pods, as kubectl prints it (keys sorted:
    items before kind), a part at a time; ``typed=False``: the API server's PodList with its
    keys sorted (``jq -S``), items without apiVersion and kind before ``kind: PodList``.
    ``pending_every``: every so many pods is Pending (kept by triage)."""
    yield b'{\n    "apiVersion": "v1",\n    "items": [\n'
    for index in range(count):
        pod = running_pod(index, typed)
        if pending_every and index % pending_every == 0:
            pod["status"]["phase"] = "Pending"
        yield (b",\n" if index else b"") + json.dumps(pod, indent=4, sort_keys=True).encode()
    kind = "List" if typed else "PodList"
    yield f'\n    ],\n    "kind": "{kind}",\n    "metadata": {{"resourceVersion": ""}}\n}}'.encode()


class GeneratedDump(io.RawIOBase):
    """A dump made as it is read (by default ``kubectl get pods -A -o json`` of ``count``
    running pods): it never exists whole in memory."""

    def __init__(self, count: int = 0, parts: Iterator[bytes] | None = None) -> None:
        self._parts = parts if parts is not None else generated_list(count)
        self._pending = b""
        self.size = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while len(self._pending) < max(size, 1):
            part = next(self._parts, None)
            if part is None:
                break
            self._pending += part
        data, self._pending = self._pending[:size], self._pending[size:]
        self.size += len(data)
        return data


def test_memory_stays_bounded_whatever_the_size_of_the_dump() -> None:
    dump = GeneratedDump(20_000)
    tracemalloc.start()
    try:
        state = read_cluster(["-"], stdin=dump)  # type: ignore[arg-type]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert dump.size > 15_000_000  # some 15 MB read
    assert state.seen == 20_000 and not state.pods  # running pods: nothing kept
    assert peak < 2_000_000, peak  # the peak is a few chunks, not the dump


def test_the_api_servers_typed_list_gives_its_items_their_type() -> None:
    """``kubectl get --raw /api/v1/namespaces/shop/pods``: ``kind: PodList`` first, and items
    without apiVersion and kind (the API server leaves them out of list items)."""
    pod = {"metadata": {"name": "web"}, "spec": {"containers": []}}
    raw = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": [pod]}
    (item,) = items(json.dumps(raw).encode())
    assert (item["apiVersion"], item["kind"]) == ("v1", "Pod")
    (item,) = items(yaml.safe_dump(raw, sort_keys=False).encode())
    assert (item["apiVersion"], item["kind"]) == ("v1", "Pod")


def peak_of(read: Any) -> tuple[Any, int]:
    """What ``read()`` returns and the peak of the memory Python allocated meanwhile."""
    tracemalloc.start()
    try:
        result = read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak


def events() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SHOP / "events.json").read_text())
    return loaded


def joined(*dumps: object) -> dict[str, Any]:
    """What ``jq -s '{apiVersion: "v1", kind: "List", items: .}' a.json b.json`` prints."""
    return {"apiVersion": "v1", "kind": "List", "items": list(dumps)}


def test_a_list_of_lists_joined_with_jq_s_is_read_not_dropped() -> None:
    """Two dumps joined into one List (``jq -s``): the items of each are read; before, the
    two Lists were two objects of no kind triage keeps ("read 2 objects", exit 0)."""
    cluster_dump, events_dump = cluster(), events()
    expected = cluster_dump["items"] + events_dump["items"]
    both = joined(cluster_dump, events_dump)
    assert items(json.dumps(both).encode()) == expected
    assert items(json.dumps(both, indent=2, sort_keys=True).encode()) == [
        json.loads(json.dumps(item, sort_keys=True)) for item in expected
    ]
    assert items(yaml.safe_dump(copy.deepcopy(both)).encode()) == expected
    # A List in a List too large to be decoded whole (over 256 KiB) is walked key by key, as
    # the top one is.
    padded = cluster_dump["items"] + [running_pod(index) for index in range(2000)]
    large = joined({**cluster_dump, "items": padded}, events_dump)
    data = json.dumps(large, indent=1).encode()
    assert len(json.dumps(large["items"][0])) > 1 << 20
    assert items(data) == padded + events_dump["items"]
    assert list(dump_items(Trickle(data, 4096), "pipe")) == padded + events_dump["items"]  # type: ignore[arg-type]
    state = read_cluster(["-"], stdin=io.BytesIO(json.dumps(both).encode()))
    assert (len(state.pods), sorted(state.nodes)) == (5, ["amd-1", "arm-1"])
    assert state.seen == len(expected)


def test_lists_joined_with_jq_s_are_streamed_in_bounded_memory() -> None:
    def parts() -> Iterator[bytes]:
        yield b'{"apiVersion": "v1", "items": [\n'
        yield from generated_list(4_000)
        yield b",\n"
        yield from generated_list(4_000, typed=False, pending_every=1000)
        yield b'\n], "kind": "List", "metadata": {}}\n'

    dump = GeneratedDump(parts=parts())
    state, peak = peak_of(lambda: read_cluster(["-"], stdin=dump))  # type: ignore[arg-type]
    assert dump.size > 5_500_000
    assert state.seen == 8_000 and len(state.pods) == 4  # the Pending pods of the PodList
    assert peak < 3_000_000, peak


@pytest.mark.parametrize("depth", [MAX_LIST_NESTING, MAX_LIST_NESTING + 1])
def test_lists_nest_in_lists_to_a_bound(depth: int) -> None:
    pod = cluster()["items"][0]
    document: dict[str, Any] = joined(pod)
    for _ in range(depth - 1):
        document = joined(document)
    for data in (json.dumps(document).encode(), yaml.safe_dump(document).encode()):
        if depth <= MAX_LIST_NESTING:
            assert items(data) == [pod]
        else:
            with pytest.raises(ClusterDumpError, match="give each dump its own --cluster"):
                items(data)


def test_a_typed_list_whose_keys_are_sorted_gives_its_items_their_type() -> None:
    """``jq -S`` or ``yaml.safe_dump`` of the API server's PodList: ``items`` comes before
    ``kind``; the items are typed when the kind is read, not refused ("has no apiVersion and
    kind") for coming first."""
    pods = [item for item in cluster()["items"] if item["kind"] == "Pod"]
    bare = [{k: v for k, v in pod.items() if k not in ("apiVersion", "kind")} for pod in pods]
    raw = {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": bare}
    for data in (
        json.dumps(raw, sort_keys=True).encode(),
        json.dumps(raw, sort_keys=True, indent=2).encode(),
        yaml.safe_dump(copy.deepcopy(raw)).encode(),  # sort_keys=True, its default
        json.dumps(joined(raw), sort_keys=True).encode(),  # a PodList in a List
        yaml.safe_dump(joined(copy.deepcopy(raw))).encode(),
        # apiVersion after kind and items: known only at the end
        json.dumps({"items": bare, "kind": "PodList", "apiVersion": "v1"}).encode(),
    ):
        assert [json.dumps(item, sort_keys=True) for item in items(data)] == [
            json.dumps(pod, sort_keys=True) for pod in pods
        ]
    # An item of a kind: List still needs its own apiVersion and kind, in any order.
    untyped = {"apiVersion": "v1", "kind": "List", "items": [{"metadata": {}}]}
    for data in (json.dumps(untyped, sort_keys=True).encode(), yaml.safe_dump(untyped).encode()):
        with pytest.raises(ClusterDumpError, match="item 1 of items has no apiVersion and kind"):
            items(data)


def test_a_large_typed_list_whose_keys_are_sorted_is_held_on_disk_not_in_memory() -> None:
    dump = GeneratedDump(parts=generated_list(6_000, typed=False, pending_every=500))
    state, peak = peak_of(lambda: read_cluster(["-"], stdin=dump))  # type: ignore[arg-type]
    assert dump.size > 4_000_000  # held: more than the 1 MiB held in memory
    assert state.seen == 6_000 and len(state.pods) == 12
    assert {pod.name for pod in state.pods.values()} == {f"web-{i}" for i in range(0, 6_000, 500)}
    assert peak < 3_000_000, peak


class HugeScalarYaml(io.RawIOBase):
    """A YAML dump of ``prefix``, then a plain scalar of ``size`` bytes, then ``suffix``, made
    as it is read; ``size`` counts the bytes read."""

    def __init__(self, prefix: bytes, size: int, suffix: bytes = b"\n") -> None:
        self._prefix, self._left, self._suffix = prefix, size, suffix
        self.size = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = size if size > 0 else 65536
        data = self._prefix[:size]
        self._prefix = self._prefix[len(data) :]
        if len(data) < size and self._left:
            run = min(self._left, size - len(data))
            data += b"a" * run
            self._left -= run
        if len(data) < size and not self._left:
            data += self._suffix[: size - len(data)]
            self._suffix = self._suffix[size - len(data) :]
        self.size += len(data)
        return data


HUGE_SCALARS = [
    (
        b"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  data:\n"
        b"    x: ",
        "dump.yaml:4: item 1 of items is larger than 1048576 bytes",
    ),
    (b"apiVersion: v1\nkind: ConfigMap\ndata:\n  x: ", "the document is larger than 1048576"),
    (b"apiVersion: v1\nkind: List\nitems: []\nmetadata:\n  x: ", "the document is larger"),
    (b"apiVersion: v1\nkind: List\nitems:\n- ", "item 1 of items is larger than 1048576"),
    (b"apiVersion: v1\nkind: Pod\n---\n", "document 2 is larger than 1048576"),
    (b"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  ? ", "item 1"),
]


@pytest.mark.parametrize(("prefix", "expected"), HUGE_SCALARS)
def test_a_huge_yaml_scalar_is_refused_before_libyaml_holds_it_whole(
    prefix: bytes, expected: str
) -> None:
    """One 32 MiB scalar with a 1 MiB limit: refused once the object's text passes the limit,
    the rest unread; before, libyaml scanned it whole (and PyYAML copied it) before the reader
    saw its size: 96 MiB peaked at 249 MiB."""
    stream = HugeScalarYaml(prefix, 32 << 20)
    limits = DumpLimits(max_object_bytes=1 << 20)
    with pytest.raises(ClusterDumpError, match=expected):
        list(dump_items(stream, "dump.yaml", limits))  # type: ignore[arg-type]
    assert stream.size < (1 << 20) + 4 * 65536, stream.size


class Failing(io.RawIOBase):
    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        raise OSError(5, "Input/output error")


def test_a_read_error_is_said_with_the_file() -> None:
    with pytest.raises(ClusterDumpError, match=r"<stdin>: cannot read: Input/output error"):
        read_cluster(["-"], stdin=Failing())  # type: ignore[arg-type]


# --- anything at all: an error or objects, never a crash -----------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "apiVersion",
                    "kind",
                    "metadata",
                    "spec",
                    "status",
                    "items",
                    "name",
                    "containers",
                    "image",
                    "ownerReferences",
                    "containerStatuses",
                    "state",
                    "waiting",
                    "message",
                    "taints",
                    "involvedObject",
                    "regarding",
                    "x",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=30,
)
KINDS = st.sampled_from(["Pod", "Event", "Node", "ReplicaSet", "List", "PodList", "Widget"])


def _read(data: bytes) -> None:
    """Read, then look for failures in what was kept: an error or a result, no crash."""
    with contextlib.suppress(ClusterDumpError):
        state = read_cluster(["-"], stdin=io.BytesIO(data))
        for failure in failures(state):
            failure.pod.as_object()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_any_bytes_are_read_or_refused(data: bytes) -> None:
    _read(data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON_VALUES)
def test_any_json_is_read_or_refused(value: object) -> None:
    _read(json.dumps(value).encode())
    _read(yaml.safe_dump(value).encode())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.fixed_dictionaries(
            {"apiVersion": st.sampled_from(["v1", "apps/v1", "events.k8s.io/v1"]), "kind": KINDS},
            optional={
                "metadata": JSON_VALUES,
                "spec": JSON_VALUES,
                "status": JSON_VALUES,
                "items": JSON_VALUES,
                "reason": JSON_VALUES,
                "message": JSON_VALUES,
                "note": JSON_VALUES,
                "regarding": JSON_VALUES,
                "involvedObject": JSON_VALUES,
            },
        ),
        max_size=4,
    )
)
def test_objects_of_any_shape_are_kept_or_refused(objects: list[dict[str, object]]) -> None:
    _read(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}).encode())


def _objects_or_refusal(data: bytes) -> list[str] | None:
    try:
        return sorted(json.dumps(item, sort_keys=True) for item in items(data))
    except ClusterDumpError:
        return None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["List", "PodList", "EventList", "Pod"])},
        optional={"apiVersion": st.sampled_from(["v1", 3]), "metadata": JSON_VALUES},
    ),
    st.lists(
        st.fixed_dictionaries(
            {"metadata": JSON_VALUES},
            optional={"apiVersion": st.just("v1"), "kind": KINDS, "items": JSON_VALUES},
        )
        | JSON_VALUES,
        max_size=4,
    ),
    st.booleans(),
    st.booleans(),
)
def test_the_order_of_keys_changes_nothing(
    header: dict[str, object], elements: list[object], nested: bool, walked: bool
) -> None:
    """The same dump with its keys in kubectl's order, the API server's (kind first) or sorted
    (``jq -S``): the same objects, or refused alike; and alike whether the JSON reader
    decodes each item whole or walks it key by key (as it does a large one)."""
    document: dict[str, object] = {**header, "items": elements}
    if nested:
        document = joined(document)
    kind_first = dict(sorted(document.items(), key=lambda entry: entry[0] != "kind"))
    expected = _objects_or_refusal(json.dumps(kind_first).encode())
    decoded_whole = clusterdump._JsonItems._whole
    never_whole = mock.patch.object(clusterdump._JsonItems, "_whole", lambda _self, _what: None)
    with never_whole if walked else contextlib.nullcontext():
        assert (clusterdump._JsonItems._whole is decoded_whole) is not walked
        assert _objects_or_refusal(json.dumps(document, sort_keys=True).encode()) == expected
        assert _objects_or_refusal(json.dumps(kind_first).encode()) == expected
    assert _objects_or_refusal(yaml.safe_dump(document).encode()) == expected


SCHEDULER_PHRASES = st.sampled_from(
    [
        "0/2 nodes are available: 2 node(s) had untolerated taint {kubernetes.io/arch: arm64}.",
        "0/2 nodes are available: 2 node(s) had untolerated taint(s).",
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
        "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector",
        "exec /app: exec format error",
        "no match for platform in manifest: not found",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    JSON_VALUES,
    JSON_VALUES,
    JSON_VALUES,
    JSON_VALUES,
    SCHEDULER_PHRASES,
    st.sampled_from(["FailedScheduling", "NotTriggerScaleUp", "Failed", "ExecFormatError"]),
)
def test_failing_pods_with_scheduling_fields_of_any_shape(
    selector: object,
    affinity: object,
    tolerations: object,
    taints: object,
    message: str,
    reason: str,
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "n", "uid": "u"},
        "spec": {
            "containers": [{"name": "c", "image": "registry.example/c:1"}],
            "nodeSelector": selector,
            "affinity": affinity,
            "tolerations": tolerations,
        },
        "status": {"phase": "Pending"},
    }
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e", "namespace": "n"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "n", "uid": "u"},
        "reason": reason,
        "message": message,
    }
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "labels": {"kubernetes.io/arch": "arm64"}},
        "spec": {"taints": taints if isinstance(taints, list) else []},
    }
    _read(json.dumps({"apiVersion": "v1", "kind": "List", "items": [pod, event, node]}).encode())
