"""The one exception family of the core, and the exit codes the CLI maps them to.

Every error names the bad input (file, line, field, job id) and, where there is one, the fix.
The CLI turns an ``AdvisorError`` into ``Error: <message>`` on stderr and ``exit_code``.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    BAD_INPUT = 3
    NOT_FOUND = 4
    EXTERNAL = 5  # an external program (sacct, scontrol, the engine) failed
    LOCKED = 6  # another process still held the database file after the wait


class AdvisorError(Exception):
    """Base of every error the core raises on purpose."""

    exit_code: ExitCode = ExitCode.ERROR


class UsageError(AdvisorError):
    """Arguments that cannot work together, or a value out of range."""

    exit_code = ExitCode.USAGE


class InputError(AdvisorError):
    """Bad input data: names the file, line and field where known."""

    exit_code = ExitCode.BAD_INPUT

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        where = []
        if source is not None:
            where.append(str(source) if line is None else f"{source}:{line}")
        if field is not None:
            where.append(f"field {field}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)
        self.source = source
        self.line = line
        self.field = field


class NotFoundError(AdvisorError):
    """A file, database, table, job or benchmark run that does not exist."""

    exit_code = ExitCode.NOT_FOUND


class ExternalToolError(AdvisorError):
    """An external program (sacct, scontrol, vllm) failed or is missing."""

    exit_code = ExitCode.EXTERNAL


class StoreError(AdvisorError):
    """The DuckDB file is unusable: wrong schema version, locked, read-only."""


class UnreadableStoreError(StoreError):
    """The file named as the database cannot be opened as one (a folder, another kind of file,
    no permission): bad input, as docs/cli.md's exit codes say."""

    exit_code = ExitCode.BAD_INPUT


class LockedError(StoreError):
    """Another process held the database file's lock for longer than the wait
    (``ADVISOR_LOCK_WAIT_S``); names the process holding it."""

    exit_code = ExitCode.LOCKED


def describe_os_error(exc: OSError) -> tuple[str, ExitCode]:
    """The message and exit code for an OSError that escaped the core: the last net under
    the CLI, so that a path that cannot be read is still 'Error: PATH: reason', never a
    traceback (the core should raise InputError or NotFoundError itself)."""
    where = f"{exc.filename}: " if exc.filename is not None else ""
    message = f"{where}{exc.strerror or exc}"
    if isinstance(exc, FileNotFoundError):
        return message, ExitCode.NOT_FOUND
    if isinstance(exc, (IsADirectoryError, NotADirectoryError, PermissionError)):
        return message, ExitCode.BAD_INPUT
    return message, ExitCode.ERROR
