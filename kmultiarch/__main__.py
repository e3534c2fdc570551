"""Console entry points. Kept tiny so ``kmultiarch --version`` starts fast."""

from __future__ import annotations

import sys


def _skip_unused_async_backends() -> None:
    """httpcore imports trio when it is installed (~130 ms with attrs), to support trio event
    loops; kmultiarch runs on asyncio only. A None entry makes that import fail fast, and only
    in kmultiarch's own process: library users are not affected."""
    sys.modules.setdefault("trio", None)  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from kmultiarch import __version__

        print(f"kmultiarch {__version__}")
        return 0
    _skip_unused_async_backends()
    from kmultiarch.cli import run

    return run(args)


def krm_main() -> int:
    """``kmultiarch-fn``: the KRM function, for runners that cannot pass arguments."""
    _skip_unused_async_backends()
    from kmultiarch.cli import run

    return run(["fn", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
