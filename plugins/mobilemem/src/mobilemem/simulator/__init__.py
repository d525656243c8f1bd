"""Local OpenAI-compatible model simulator (DESIGN §9)."""
