"""The pieces of the ``local_docker`` scheduler.

``_request`` translates an AppDef into container requests, ``_state`` maps container states to
TorchX states and ``_opts`` holds the run options: these are pure (no ``docker`` import).
``_client`` is the one module that imports the ``docker`` SDK and talks to the engine;
``_marks`` reads an app's containers and marker volumes (cancelled, added labels) through it.
"""
