"""Example servers: the demo `stratus serve` runs, the conformance fixture, and the benchmark's `add`."""
