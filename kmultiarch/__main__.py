"""Console entry points. Kept tiny so ``kmultiarch --version`` starts fast."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--version"]:
        from kmultiarch import __version__

        print(f"kmultiarch {__version__}")
        return 0
    from kmultiarch.cli import run

    return run(args)


def krm_main() -> int:
    """``kmultiarch-fn``: the KRM function, for runners that cannot pass arguments."""
    from kmultiarch.cli import run

    return run(["fn", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
