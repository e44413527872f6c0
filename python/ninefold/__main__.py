"""``python -m ninefold``: the version, and where the runtime would wire up from."""

import argparse

from . import __version__


def main():
    parser = argparse.ArgumentParser(prog="python -m ninefold", description=__doc__)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    args = parser.parse_args()
    if args.version:
        print(f"ninefold {__version__}")
        return
    parser.print_help()


main()
