"""The execution pipeline every tool call, resource read and prompt get passes through (see `pipeline.py`)."""
