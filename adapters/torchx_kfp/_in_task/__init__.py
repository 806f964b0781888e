"""What runs inside a KFP task's container: the launcher's and the workflow step's run-time side."""
