"""The `helix` command: one module per command group, registered in cli/main.py."""
