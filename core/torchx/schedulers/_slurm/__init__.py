"""The pieces of the ``slurm`` scheduler.

``_request`` renders an AppDef into the ``sbatch`` script (one heterogeneous job, one component
per replica), ``_states`` maps Slurm job states, pending reasons and ``squeue``/``sacct`` rows to
TorchX states and descriptions, ``_logs`` reads the per-replica log files, and ``_opts`` holds the
run options: these are pure. ``_client`` is the one module that runs the Slurm commands (argv
lists, never through a shell).
"""
