"""Entry points: the buffered Lambda handler and the `stratus` command line."""
