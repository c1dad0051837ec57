"""The report's commands: `stoker report`, `stoker baseline` and `stoker import`, each a
thin argument layer over the pipeline and the ingest room.

May import: reports
"""
