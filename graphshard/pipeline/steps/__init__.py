"""The pipeline's steps as Prefect tasks, one module each (ingest, assign, shuffle, validate, publish), and what they
share (`common.py`: reuse a cached artifact or build it with progress). Each wraps the library's step function and
says what its cache key is made of; the flow (`graphshard.pipeline.flow`) chains them.
"""
