"""Pure pieces of the ``local_docker`` scheduler (no ``docker`` import here).

``_request`` translates an AppDef into container requests; ``_state`` maps container states
to TorchX states. The one module that talks to the engine is
:mod:`torchx.schedulers._docker_client`.
"""
