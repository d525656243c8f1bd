"""Local OpenAI-compatible model simulator (DESIGN §9).

``start_simulator()`` serves chat completions on 127.0.0.1 and plays every model role of the
project (ingest, answer, judge, compression) with deterministic policies (``policy``), optional
fault rules (``faults``) and a request log. Importing this package loads only the stdlib.
"""

from .faults import FaultRule
from .server import start_simulator
from .state import LoggedRequest, Simulator

__all__ = ["FaultRule", "LoggedRequest", "Simulator", "start_simulator"]
