"""Layers read as the runtime extracts them (issue 28): the tar reader against Go's
archive/tar rules (src/archive/tar/reader.go), one layer applied as containerd's applyNaive
applies it (pkg/archive/tar.go), what is ambiguous between the runtimes, and the search
bounded by the run's deadline. Tables of hand-made archives and layers."""

from __future__ import annotations

import itertools

import pytest
from support.executables import EM_AARCH64, EM_X86_64, elf

from kmultiarch.core.images.platform import Platform
from kmultiarch.core.verification.binaries import FileHead
from kmultiarch.core.verification.layers import (
    Ambiguous,
    LayerIndex,
    Located,
    Pending,
    TarHeader,
    lookup,
    resolve,
)
from kmultiarch.core.verification.verdicts import (
    PlatformVerification,
    StartConfig,
    search_start_file,
)

ARM64 = Platform.parse("linux/arm64")
DIGEST = "sha256:" + "e" * 64


def test_a_type_containerd_refuses_makes_the_layer_refused() -> None:
    layer = built(TarHeader("bin/app", "refused", 0o755, 0, typeflag="7"))
    assert layer.refused and "containerd" in layer.refused
    assert isinstance(lookup([layer], "bin/app"), Ambiguous)


# -- one layer, applied ------------------------------------------------------------------------


def file(name: str, mode: int = 0o755) -> TarHeader:
    return TarHeader(name, "file", mode, 10)


def built(*headers: TarHeader) -> LayerIndex:
    layer = LayerIndex(DIGEST)
    for item in headers:
        layer.add(item)
    layer.complete = True
    return layer


def test_a_path_named_twice_in_a_layer_is_its_last_entry() -> None:
    layer = built(file("bin/app"), TarHeader("bin/app", "symlink", 0o777, 0, "/x"))
    found = lookup([layer], "bin/app")
    assert isinstance(found, Located) and found.entry is not None
    assert (found.entry.kind, found.entry.ordinal) == ("symlink", 1)


@pytest.mark.parametrize(
    ("name", "key"),
    [("../bin/app", "bin/app"), ("/bin/app", "bin/app"), ("a/../../bin/./app", "bin/app")],
)
def test_names_are_cleaned_as_containerd_cleans_them(name: str, key: str) -> None:
    assert set(built(file(name)).entries) == {key}


def test_an_entry_replacing_a_directory_deletes_what_the_layer_put_under_it() -> None:
    layer = built(file("app/server"), file("app"))
    below = built(file("app/server"))
    assert lookup([layer, below], "app/server").__class__.__name__ == "Absent"
    found = lookup([layer, below], "app")
    assert isinstance(found, Located) and found.entry is not None and found.entry.kind == "file"


def test_a_hard_link_keeps_the_file_its_target_named_then_and_gives_it_its_mode() -> None:
    layer = built(
        file("bin/real", 0o711),
        TarHeader("bin/app", "hardlink", 0o755, 0, "bin/real"),
        file("bin/real", 0o755),  # a new file at the target's path: the link keeps the old
    )
    app, real = layer.entries["bin/app"], layer.entries["bin/real"]
    assert app.data == 0 and real.data == 2
    assert layer.mode_of(app) == 0o755  # lchmod after link: the shared file's mode
    assert not layer.ambiguous


def test_a_hard_link_giving_its_file_execute_bits_is_ambiguous() -> None:
    # containerd applies the link's mode to the file; Docker's and containers/storage's
    # unpackers, as a rule, do not.
    layer = built(file("bin/real", 0o644), TarHeader("bin/app", "hardlink", 0o755, 0, "bin/real"))
    assert isinstance(resolve([layer], "/bin/app"), Ambiguous)


@pytest.mark.parametrize(
    "headers",
    [
        # a whiteout and an entry of one path in one layer, either order
        (file("app/server"), file("app/.wh.server")),
        (file("app/.wh.server"), file("app/server")),
        (file(".wh.app"), file("app/server")),
        # a hard link to what is not a file of its own layer
        (TarHeader("app/server", "hardlink", 0o755, 0, "bin/elsewhere"),),
        # a directory replacing a file of the same layer
        (file("app/server"), TarHeader("app/server", "dir", 0o755, 0)),
        # a global header's name (containerd removes it before ignoring the header)
        (TarHeader("app/server", "global", 0, 0),),
    ],
)
def test_what_the_runtimes_disagree_on_is_ambiguous(headers: tuple[TarHeader, ...]) -> None:
    layer = built(*headers)
    assert isinstance(resolve([layer], "/app/server"), Ambiguous), layer


def test_an_entry_under_a_link_of_its_own_layer_refuses_the_layer() -> None:
    layer = built(TarHeader("bin", "symlink", 0o777, 0, "usr/bin"), file("bin/app"))
    assert layer.refused is not None
    assert isinstance(resolve([layer], "/usr/bin/app"), Ambiguous)


def test_an_entry_under_a_link_of_a_layer_below_is_ambiguous() -> None:
    top = built(file("bin/app"))  # the overlay applier puts it in a real /bin; naive, via it
    bottom = built(TarHeader("bin", "symlink", 0o777, 0, "usr/bin"), file("usr/bin/app"))
    assert isinstance(resolve([top, bottom], "/bin/app"), Ambiguous)


def test_a_non_directory_hides_what_the_layers_below_hold_under_it() -> None:
    top = built(TarHeader("opt", "symlink", 0o777, 0, "/srv"))
    bottom = built(file("opt/tool"))
    assert lookup([top, bottom], "opt/tool").__class__.__name__ == "Absent"


# -- the search ------------------------------------------------------------------------------


def with_heads(layer: LayerIndex, heads: dict[str, bytes]) -> LayerIndex:
    for path, content in heads.items():
        entry = layer.entries[path]
        layer.heads[entry.data] = FileHead(content[:1024], len(content))
    return layer


def test_the_start_file_named_twice_is_judged_by_the_last() -> None:
    layer = LayerIndex(DIGEST)
    first = layer.add(TarHeader("bin/app", "file", 0o755, 64))
    last = layer.add(TarHeader("bin/app", "file", 0o755, 64))
    assert first is not None and last is not None
    layer.heads[first.data] = FileHead(elf(EM_AARCH64, size=64), 64)
    layer.heads[last.data] = FileHead(elf(EM_X86_64, size=64), 64)
    layer.complete = True
    found = search_start_file([layer], StartConfig(entrypoint=("/bin/app",)), ARM64, DIGEST)
    assert isinstance(found, PlatformVerification) and found.status == "mismatch"


def test_an_ambiguous_start_file_is_unverified_never_verified() -> None:
    layer = with_heads(built(file("app/server"), file("app/.wh.server")), {})
    found = search_start_file([layer], StartConfig(entrypoint=("/app/server",)), ARM64, DIGEST)
    assert isinstance(found, PlatformVerification)
    assert (found.status, found.code) == ("unverified", "ambiguous")


class Deadline(Exception):
    pass


def test_the_search_checks_the_deadline_at_each_path_directory() -> None:
    layer = built(*(file(f"d{i}/app", 0o644) for i in range(3000)))
    start = StartConfig(
        entrypoint=("app",), env=("PATH=" + ":".join(f"/d{i}" for i in range(3000)),)
    )
    calls = itertools.count()

    def check() -> None:
        if next(calls) >= 100:
            raise Deadline

    with pytest.raises(Deadline):
        search_start_file([layer], start, ARM64, DIGEST, check=check)
    assert next(calls) == 101


def test_an_arm_file_read_in_passing_is_read_again_whole_before_its_variant_is_unknown() -> None:
    from support.executables import arm_elf

    program = arm_elf(cpu_arch=None, padding=64)
    layer = LayerIndex(DIGEST)
    entry = layer.add(TarHeader("bin/app", "file", 0o755, len(program)))
    assert entry is not None
    layer.heads[entry.data] = FileHead(program[:1024], len(program))
    layer.complete = True
    start = StartConfig(entrypoint=("/bin/app",))
    armv6 = Platform.parse("linux/arm/v6")
    again = search_start_file([layer], start, armv6, DIGEST)
    assert again == Pending(0, "bin/app", entry.data)
    layer.deep.add(entry.data)
    found = search_start_file([layer], start, armv6, DIGEST)
    assert isinstance(found, PlatformVerification) and found.status == "verified"


def test_a_path_of_thousands_of_components_is_searched_in_linear_time() -> None:
    # 3,000 components in PATH and 3,000 entries that deep: 13.6 s of search before.
    import time

    deep = "/".join(["a"] * 1800)
    layer = built(*(file(f"{deep}/x{i}", 0o644) for i in range(3000)))
    start = StartConfig(entrypoint=("app",), env=("PATH=/" + "/".join(["a"] * 1900),))
    started = time.perf_counter()
    found = search_start_file([layer], start, ARM64, DIGEST)
    assert isinstance(found, PlatformVerification) and found.code == "not-found"
    assert time.perf_counter() - started < 1


def test_names_longer_than_linux_allows_refuse_the_layer() -> None:
    layer = built(file("a" * 300 + "/app"))
    assert layer.refused and "longer than Linux allows" in layer.refused
    found = resolve([built(file("bin/app"))], "/" + "b/" * 2100 + "app")
    assert found.__class__.__name__ == "Unresolvable"
