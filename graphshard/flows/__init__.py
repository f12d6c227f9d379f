"""The pipeline as a Prefect flow (pipeline.py) and what it needs: step caching (cache.py, manifest.py), progress
(progress.py), publication (publish.py), Prefect's environment (env.py).

Nothing here is imported by the library. progress.py is also imported by the Dask scheduler (its plugin), so this
package must not import Prefect at import time.
"""
