"""The plan as a terminal table (`graphshard plan`, `graphshard run --plan`)."""

from __future__ import annotations

from graphshard.plan.build import RunPlan
from graphshard.plan.fit import gb, kill_threshold

HEADER = ("step", "worker peak", "flow peak", "scratch", "output", "dask tasks", "time (s)", "worker peak set by")


def _row(st) -> tuple[str, ...]:
    lo, hi = st.seconds
    return (f"{st.step} ({st.detail})", gb(st.worker_peak), gb(st.flow_peak), gb(st.scratch), gb(st.output),
            f"{st.tasks:,}", f"{lo:,.0f}-{hi:,.0f}", st.peak_task)


def table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def text(plan: RunPlan) -> str:
    """The whole plan: graph, step table, limits, and whether it fits (with what to change)."""
    g, s, lim = plan.sizes, plan.settings, plan.limits
    lines = [f"graph: {g.nodes:,} nodes, {g.edges:,} edges in {g.edge_chunks} chunks (largest {g.largest_chunk:,}), "
             f"{gb(g.input_bytes)} of input; {s.num_parts} partitions, method {s.method}", ""]
    lines += table([HEADER] + [_row(st) for st in plan.steps])
    worker = ("the scheduler has no workers yet: their memory is not checked, and `graphshard run` stops if none "
              "joins within cluster.connect_timeout" if lim.external else
              f"memory_limit {gb(lim.worker_memory)} (killed at {gb(lim.worker_memory * kill_threshold())})"
              if lim.worker_memory else "no memory limit")
    lines += ["", f"cluster: {s.workers} workers x {s.threads} thread(s), {worker}; flow host {gb(lim.host_memory)}"]
    lines += [f"disk: {loc.key} ({loc.path}): needs {gb(loc.need)}, {gb(loc.free)} free" for loc in lim.locations]
    lines += ["time: a range for this machine class (coefficients measured on a 2-core VM; graphshard/plan/"
              "coefficients.json)", ""]
    lines += ["fits: yes"] + [f"  close: {t}" for t in plan.tight] if plan.fits else (
        ["fits: NO"] + [f"  {m.line()}" for m in plan.misfits])
    return "\n".join(lines)
