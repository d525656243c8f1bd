"""The baselines (DESIGN §10): the simplest candidates on the same contract as ReMe Image, so its
score has a floor and a reference. Neither makes a model request to ingest; each question is one
request with an official MobileMem QA template, under the same model preset.

- `no-memory`: the text-memory template with an empty `[Retrieved Memories]`.
- `bm25-rag`: the user's dialogue turns indexed with bm25s; the multimodal-memory template with
  the top-k transcript chunks and the images they reference (MobileMem's NaiveRAG shape).

Both are opened by `mobilemem.candidates.open_candidate`.
"""
