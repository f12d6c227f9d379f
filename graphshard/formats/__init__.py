"""File formats graphshard reads and writes, as data and plain functions (no step logic): every step imports from here,
nothing here imports a step.

Input: `chunked.py` (the chunked graph's metadata.json model, `chunk_bounds`), `readers.py` (`READERS`: numpy, parquet,
csv chunk files), `jsonfile.py`. Writing chunked graphs: `chunked_writer.py`. Between steps: `assignment.py` (the
assignment folder), `buckets.py` (the Dask tasks' record files). Output, DGL's: `dgl_binary.py` (DGL's binary files),
`dgl_columns.py` (the same, indexed and read by row ranges), `partition_config.py`, `partition_book.py`,
`partition_reader.py`. `arrow.py`: numpy <-> Arrow without pandas.
"""
