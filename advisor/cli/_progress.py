"""The progress display of the CLI: a rich progress bar on stderr behind the core's
``ProgressFn`` (see advisor.progress).

Each ``label`` the core reports gets a line. A command that knows what the steps of its work
are called passes ``stages`` (ingest: reading, parsing, ...), so a line says which stage runs
now instead of a bare "1/5"; one whose steps are rows passes ``unit`` and the line shows the
count, the rate and, when the total is known, the time left. A command that knows the size of
each label's input in advance passes ``sizes`` and gets a total line with its rate and the time
left over all of them (ingest: the files' bytes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console

stderr = Console(stderr=True)


def _count(n: float) -> str:
    return f"{n:,.0f}"


def _bytes(n: float) -> str:
    for unit in ("B", "kB", "MB"):
        if n < 1000:
            return f"{n:,.0f} B" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1000
    return f"{n:,.1f} GB"


class RichProgress:
    """A rich progress bar on stderr behind the core's ``ProgressFn``."""

    def __init__(
        self,
        enabled: bool = True,
        *,
        stages: Sequence[str] | None = None,
        unit: str | None = None,
        sizes: Mapping[str, int] | None = None,
        console: Console | None = None,
    ) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self._console = console or stderr
        self._stages = tuple(stages or ())
        self._unit = unit
        self._sizes = dict(sizes or {})
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[amount]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("{task.fields[left]}"),
            console=self._console,
            disable=not enabled or not self._console.is_terminal,
            transient=False,
        )
        self._tasks: dict[str, Any] = {}
        self._finished: set[str] = set()
        self._overall: Any = None
        if len(self._sizes) > 1:
            self._overall = self._progress.add_task(
                f"{len(self._sizes)} files", total=sum(self._sizes.values()), **self._blank()
            )

    @staticmethod
    def _blank() -> dict[str, Any]:
        return {"amount": "", "rate": "", "left": ""}

    def __enter__(self) -> RichProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.__exit__(*exc)  # type: ignore[arg-type]

    def describe(self, label: str, done: int, total: int | None) -> dict[str, Any]:
        """The fields of ``label``'s line after ``progress(label, done, total)``: what rich
        shows in its text columns (kept apart from rich for the tests)."""
        task = self._tasks.get(label)
        elapsed = None if task is None else self._progress.tasks[task].elapsed
        fields: dict[str, Any] = {"description": label, **self._blank()}
        finished = total is not None and done >= total
        if self._stages and total == len(self._stages):
            stage = "done" if finished else self._stages[max(done, 0)]
            fields["description"] = f"{label} · {stage}"
            fields["amount"] = f"stage {min(done + 1, total)}/{total}" if not finished else ""
        elif self._unit is not None:
            amount = _count(done) if total is None else f"{_count(done)}/{_count(total)}"
            fields["amount"] = f"{amount} {self._unit}"
            if elapsed and done:
                rate = done / elapsed
                fields["rate"] = f"{_count(rate)} {self._unit}/s"
                if total is not None and not finished:
                    fields["left"] = f"{(total - done) / rate:,.0f} s left"
        else:
            fields["amount"] = _count(done) if total is None else f"{_count(done)}/{_count(total)}"
        return fields

    def __call__(self, label: str, done: int, total: int | None) -> None:
        task = self._tasks.get(label)
        if task is None:
            task = self._tasks[label] = self._progress.add_task(label, total=total, **self._blank())
        self._progress.update(
            task, completed=done, total=total, **self.describe(label, done, total)
        )
        if total is not None and done >= total and label not in self._finished:
            self._finished.add(label)
            self._advance_overall(label)

    def _advance_overall(self, label: str) -> None:
        if self._overall is None or label not in self._sizes:
            return
        self._progress.advance(self._overall, self._sizes[label])
        t = self._progress.tasks[self._overall]
        fields: dict[str, Any] = {"amount": f"{_bytes(t.completed)}/{_bytes(t.total or 0)}"}
        fields.update(rate="", left="")
        if t.elapsed and t.completed:
            rate = t.completed / t.elapsed
            fields["rate"] = f"{_bytes(rate)}/s"
            if t.total is not None and t.completed < t.total:
                fields["left"] = f"{(t.total - t.completed) / rate:,.0f} s left"
        self._progress.update(self._overall, **fields)
