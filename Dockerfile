# One image for every service of docker-compose.yml: Prefect server and worker, Dask scheduler and workers.
FROM python:3.11-slim
ENV DO_NOT_TRACK=1 \
    PREFECT_SERVER_ANALYTICS_ENABLED=false \
    PIP_NO_CACHE_DIR=1 \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
RUN apt-get update \
 && apt-get install -y --no-install-recommends openmpi-bin libopenmpi-dev libscotchparmetis-dev libmetis5 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY graphshard ./graphshard
RUN pip install ".[mpi]" \
 && python -c "import distributed.dashboard.core"  # bokeh (dask[diagnostics]): the Dask dashboard works
COPY configs ./configs
COPY prefect.yaml ./
# /app/data is the shared volume: input graphs, step artifacts (work) and published partitions (out).
VOLUME ["/app/data"]
