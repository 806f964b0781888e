"""What runs where the pipeline is compiled: AppDef -> KFP component spec, tasks, pipelines."""
