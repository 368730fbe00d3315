"""agentgym test suite (a regular package, so site-packages with a stray top-level `tests` cannot shadow it)."""
