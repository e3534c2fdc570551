"""The exception tree of kmultiarch.

Every error a user can cause or meet derives from :class:`KmultiarchError`; its message is one
line that names the file, document or image concerned and says what to do. Library errors
(httpx, YAML parsers, OS errors) are translated at the edge with ``raise ... from exc``.

    KmultiarchError
    ├── InputError                bad input the user gave: exit 2
    │   ├── InvalidReferenceError   an image reference that does not parse
    │   ├── InvalidPlatformError    a platform string that does not parse
    │   ├── PolicyError             a MultiArchPolicy that does not validate (source, key
    │   │                           path and message as fields)
    │   └── ManifestStreamError     YAML that cannot be read (file, line, reason)
    ├── RegistryError             an image whose platforms could not be resolved
    │   ├── RegistryAuthError       credentials refused or token endpoint failing
    │   ├── ManifestError           a manifest that is malformed, unsupported, too large or forged
    │   └── RegistryTransportError  connection, timeout or server errors after retries
    ├── ResolutionError           why one image is unresolved, as data (reference, reason,
    │                             status, transient): carried by a Resolution, never raised
    ├── UneditableDocumentError   a change kmultiarch cannot write faithfully (its limit)
    ├── WriteError                files that could not be written (each old or fully new)
    └── CacheError                a cache that cannot be used
"""

from __future__ import annotations

from collections.abc import Sequence

#: A path into a YAML value: mapping keys (strings) and list positions (integers), such as
#: ``("spec", "tolerations", "linux/arm64", 0, "effect")``.
KeyPath = tuple[str | int, ...]


def format_field_path(path: Sequence[str | int]) -> str:
    """``spec.template.spec.containers[0]``: the form KRM results and messages use."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


class KmultiarchError(Exception):
    """Base of all errors kmultiarch reports to its users."""

    exit_code = 1


class InputError(KmultiarchError):
    """Input given by the user is wrong; the run cannot start or go on."""

    exit_code = 2


class InvalidReferenceError(InputError, ValueError):
    """An image reference that is not valid."""


class InvalidPlatformError(InputError, ValueError):
    """A platform string that is not valid."""


class PolicyError(InputError):
    """A MultiArchPolicy (or KRM functionConfig) that does not validate.

    Where, as fields: ``source``, the file or functionConfig; ``path``, the key path in it
    (``("spec", "tolerations", "linux/arm64", 0, "effect")``); and ``message``, what is wrong
    there. ``str()`` joins them once: ``policy.yaml: spec.tolerations.linux/arm64[0].effect:
    expected one of ...`` (an empty part left out: an error about a whole file has no path, and
    one whose message is located already, as a YAML reader's ``file:line: ...``, no source).
    :meth:`rerooted` moves the path, for a form whose keys are spelt otherwise (a ConfigMap's
    ``data.excludeKinds`` read into ``spec.exclude.kinds``).
    """

    def __init__(self, message: str, *, source: str = "", path: KeyPath = ()) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.path = path

    def __str__(self) -> str:
        parts = (self.source, format_field_path(self.path), self.message)
        return ": ".join(part for part in parts if part)

    def rerooted(self, prefix: KeyPath, onto: KeyPath) -> PolicyError:
        """The same error with ``prefix``, the start of its path, replaced by ``onto``."""
        if self.path[: len(prefix)] != prefix:
            raise ValueError(f"{format_field_path(self.path)} is not under {prefix}")
        return PolicyError(
            self.message, source=self.source, path=(*onto, *self.path[len(prefix) :])
        )


class ManifestStreamError(InputError):
    """A YAML stream that cannot be read. The message names the file, line and reason."""


class RegistryError(KmultiarchError):
    """The platforms of an image could not be resolved from its registry."""


class RegistryAuthError(RegistryError):
    """The registry or its token endpoint refused the credentials, or failed."""


class ManifestError(RegistryError):
    """A manifest or config that is malformed, unsupported, oversized or not matching its digest."""


class RegistryTransportError(RegistryError):
    """Connection errors, timeouts, 5xx or 429 answers that did not recover within the retries."""


class ResolutionError(KmultiarchError):
    """Why the platforms of one image are not known, as data: the ``reference`` concerned, the
    ``reason`` (a sentence without the reference, for messages that name the image already),
    the HTTP ``status`` when a registry answered, and whether trying again later may succeed
    (``transient``: connection errors, timeouts, 5xx, 429). ``str()`` is ``reference: reason``.
    """

    def __init__(
        self, reference: str, reason: str, *, status: int | None = None, transient: bool = False
    ) -> None:
        super().__init__(f"{reference}: {reason}")
        self.reference = reference
        self.reason = reason
        self.status = status
        self.transient = transient

    @classmethod
    def from_exception(cls, reference: str, exc: Exception) -> ResolutionError:
        """The resolution error an exception raised while resolving ``reference`` means.
        Registry errors name the reference first; the reason is what follows it."""
        message = str(exc)
        reason = message.removeprefix(f"{reference}: ")
        return cls(
            reference,
            reason,
            status=getattr(exc, "status", None),
            transient=isinstance(exc, RegistryTransportError),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ResolutionError) and (
            self.reference,
            self.reason,
            self.status,
            self.transient,
        ) == (other.reference, other.reason, other.status, other.transient)

    def __hash__(self) -> int:
        return hash((self.reference, self.reason, self.status, self.transient))


class UneditableDocumentError(KmultiarchError):
    """kmultiarch could not write a change without altering the rest of the document: its own
    limitation, not bad input (exit 1, not 2)."""


class WriteError(KmultiarchError):
    """Files could not be written. The message names the file and says what was written: each
    file is either as it was or fully new."""


class CacheError(KmultiarchError):
    """The cache cannot be opened or used."""
