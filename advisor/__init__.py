"""advisor: Slurm allocation analytics and CPU-to-GPU ratio advisor.

The core (everything in this package except ``advisor.cli``) never imports typer, rich or
streamlit; ``lint-imports`` checks it (see ``pyproject.toml``).
"""

__version__ = "0.1.0"
