"""`graphshard plan`: what a run will need (memory per worker and of the flow process, scratch and output bytes, Dask
tasks, time) per step, from metadata.json, the chunk files' headers and the config alone, and whether the configured
cluster and disks hold it. `build.plan_run` makes the plan, `gate.check` is what `graphshard run` calls before any
work, `diskfull` words a disk that fills up anyway. No Prefect here."""
