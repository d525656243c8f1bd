"""The memory system under test, ReMe Image: workspace, auto_memory ingest, BM25 index, answer agent.

Nothing here ever sees a reference answer, evidence or question type: it receives only the
candidate views of `mobilemem.dataset`.
"""
