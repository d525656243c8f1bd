"""The run lifecycle around the Prefect tasks: setting a run up and closing it, the per-process
registry of running runs, the dashboard, and how a step's outcome becomes records and a task-run state.
`tasks/` holds the stages only (one `@task` per module); `flows/` composes them; `cli/` starts them.
A run's life in one process: nothing here parses a command line or imports tasks, flows or cli."""
