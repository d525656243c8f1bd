"""The ReMe plugin of mobilemem-bench: the candidate is ReMe itself (DESIGN §4).

`plugin.yaml` is ReMe's manifest (entry point `reme.plugins` → `mobilemem`): the `auto_memory`,
`bm25_search`, `read_image` and `agentic_answer` jobs on ReMe's own steps, and two backends, the
`agentic_answer` step and ReMe's AgentScope wrapper with runtime-state injection switchable.
`app` opens one ReMe application per user; `ingest` and `answer` call its jobs. Nothing here
re-implements a ReMe step, and nothing here ever sees a reference answer or evidence.
Importing this package loads nothing heavy.
"""

PLUGIN_NAME = "mobilemem"
PRESET = "benchmark"  # the ReMe preset every user's application starts from (`app`)
