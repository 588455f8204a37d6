"""How a span reads on a console: the one line `stratus serve --traces` (`stratus.otel_tracing.Waterfall`) and
`stratus local --traces` (`stratus.emulator.trace_receiver`) print for it."""


def waterfall_line(trace_id: str, depth: int, service: str, name: str, duration_ms: float) -> str:
    """Its trace's first 8 hex digits, then the span indented two spaces a level under its parent."""
    return f"[trace {trace_id[:8]}] {'  ' * depth}{service}  {name}  {duration_ms:.1f} ms"
