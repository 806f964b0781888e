"""Example components for the tour (docs/tour.md, "Write your own component").

Run: ``torchx run -s local_cwd examples/components.py:greet``.
"""

import torchx.specs as specs


def greet(name: str = "world", times: int = 1, shout: bool = False) -> specs.AppDef:
    """Prints a greeting from every replica.

    Args:
        name: who to greet
        times: how many replicas greet
        shout: upper-case the greeting
    """
    text = f"hello {name}".upper() if shout else f"hello {name}"
    return specs.AppDef(
        name="greet",
        roles=[
            specs.Role(
                name="greeter",
                image="",
                entrypoint="python",
                args=[
                    "-c",
                    "import sys; print(sys.argv[1], sys.argv[2])",
                    text,
                    specs.macros.replica_id,
                ],
                num_replicas=times,
                resource=specs.resource(h="cpu.small"),
            )
        ],
    )
