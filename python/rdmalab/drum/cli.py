"""`rdmalab drum ...` subcommands."""


def register(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("drum", help="DRUM resource-scheduling solver")
    p.set_defaults(func=lambda args: print("drum: not implemented yet") or 1)
