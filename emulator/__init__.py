"""`stratus local`: the stack a SAM template describes, emulated on 127.0.0.1 (front doors, Lambda containers).

Importing this package imports nothing: `stratus.handlers.cli` reaches `command` for its argument parser only.
"""
