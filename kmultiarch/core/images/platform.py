"""Platforms (``os/architecture[/variant][:os.version]``): parse, normalise, format, match.

Pure: no network, no disk. Normalisation follows containerd's ``platforms`` package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kmultiarch.errors import InvalidPlatformError

_ARCH_ALIASES = {
    "x86_64": "amd64",
    "x86-64": "amd64",
    "amd64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
    "armhf": "arm",
    "armel": "arm",
    "arm": "arm",
    "i386": "386",
    "i486": "386",
    "i586": "386",
    "i686": "386",
    "386": "386",
}
# Variants implied by an architecture alias (armhf is Debian's armv7 hard-float, armel v6).
_ALIAS_VARIANT = {"armhf": "v7", "armel": "v6"}
_DEFAULT_VARIANT = {"arm": "v7"}
# Variants that are the architecture's baseline and so say nothing (arm64/v8 is plain arm64).
_BASELINE_VARIANT = {"arm64": "v8", "amd64": "v1"}
_OS_ALIASES = {"macos": "darwin"}
_TOKEN = re.compile(r"[a-z0-9_.-]+\Z")
_OS_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+)*\Z")
UNKNOWN = "unknown"


@dataclass(frozen=True, order=True)
class Platform:
    """A normalised platform. ``variant`` and ``os_version`` are empty when not given."""

    os: str
    architecture: str
    variant: str = ""
    os_version: str = ""

    @classmethod
    def create(
        cls, os: str, architecture: str, variant: str = "", os_version: str = ""
    ) -> Platform:
        """Build a normalised platform from its parts (as an image config or index names them)."""
        os_name = _OS_ALIASES.get(os.strip().lower(), os.strip().lower())
        raw_arch = architecture.strip().lower()
        arch = _ARCH_ALIASES.get(raw_arch, raw_arch)
        var = variant.strip().lower()
        if var and var[0].isdigit():
            var = f"v{var}"
        if not var:
            var = _ALIAS_VARIANT.get(raw_arch, _DEFAULT_VARIANT.get(arch, ""))
        if _BASELINE_VARIANT.get(arch) == var:
            var = ""
        for label, value in (("os", os_name), ("architecture", arch)):
            if not value or not _TOKEN.match(value):
                raise InvalidPlatformError(
                    f"invalid platform {os}/{architecture}: {label} {value!r} is not valid"
                )
        if var and not _TOKEN.match(var):
            raise InvalidPlatformError(f"invalid platform variant {variant!r}")
        version = os_version.strip()
        if version and not _OS_VERSION.match(version):
            raise InvalidPlatformError(
                f"invalid platform os.version {os_version!r}: expected numbers like 10.0.17763"
            )
        return cls(os_name, arch, var, version)

    @classmethod
    def parse(cls, text: str) -> Platform:
        """Parse ``os/arch[/variant][:os.version]`` (or containerd's ``os(version)/arch``)."""
        if not isinstance(text, str) or not text.strip():
            raise InvalidPlatformError(f"invalid platform {text!r}: it is empty")
        spec = text.strip()
        os_version = ""
        paren = re.match(r"([^/(]+)\(([^)]*)\)(/.*)\Z", spec)
        if paren:
            spec, os_version = paren.group(1) + paren.group(3), paren.group(2)
        elif ":" in spec:
            spec, _, os_version = spec.partition(":")
        parts = spec.split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise InvalidPlatformError(
                f"invalid platform {text!r}: expected os/architecture[/variant], "
                "e.g. linux/amd64, linux/arm/v7, windows/amd64:10.0.17763"
            )
        try:
            return cls.create(parts[0], parts[1], parts[2] if len(parts) == 3 else "", os_version)
        except InvalidPlatformError as exc:
            raise InvalidPlatformError(f"invalid platform {text!r}: {exc}") from exc

    @property
    def build(self) -> str:
        """major.minor.build of ``os_version`` (``10.0.17763`` of ``10.0.17763.6659``): what the
        kubelet writes into a Windows node's ``node.kubernetes.io/windows-build`` label."""
        return ".".join(_build(self.os_version)) if self.os_version else ""

    @property
    def is_unknown(self) -> bool:
        """``unknown/unknown``: how BuildKit marks attestation manifests in an index."""
        return UNKNOWN in (self.os, self.architecture)

    def runs_on(self, node: Platform) -> bool:
        """Whether an image built for this platform runs on nodes of platform ``node``.

        A node platform without variant (node labels carry none) accepts every variant; with one,
        older variants of the same architecture run too (an arm/v7 node runs arm/v6 images).
        A node os.version matches images of the same major.minor.build.
        """
        if self.os != node.os or self.architecture != node.architecture:
            return False
        # No variant on amd64/arm64 is the baseline (v1, v8), which every later variant runs.
        variant = self.variant or _BASELINE_VARIANT.get(self.architecture, "")
        if (
            node.variant
            and variant != node.variant
            and not (variant and _variant_number(variant) <= _variant_number(node.variant))
        ):
            return False
        if node.os_version and self.os_version:
            return _build(self.os_version) == _build(node.os_version)
        return True

    def __str__(self) -> str:
        text = f"{self.os}/{self.architecture}"
        if self.variant:
            text += f"/{self.variant}"
        if self.os_version:
            text += f":{self.os_version}"
        return text


def _variant_number(variant: str) -> int:
    digits = variant.lstrip("v")
    return int(digits) if digits.isdigit() else 1 << 30


def _build(os_version: str) -> tuple[str, ...]:
    return tuple(os_version.split(".")[:3])


def format_platforms(platforms: frozenset[Platform] | set[Platform]) -> str:
    """Sorted, comma-separated: the form used in messages."""
    return ", ".join(str(p) for p in sorted(platforms)) or "(none)"
