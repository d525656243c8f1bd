"""The analysis side of a run: evidence attribution, report.html and `compare`.

Like the judge, it may read references and evidence; it runs after judging and nothing it computes
reaches the candidate. It is imported on demand (pandas, Plotly and SciPy are heavy), never by
`mobilemem_judge` itself.
"""
