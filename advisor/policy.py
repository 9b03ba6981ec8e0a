"""The CPU-per-GPU policy that Slurm's job_submit / cli_filter Lua plugins apply, and its export.

The structure is the contract in ``docs/policy-format.md``: a version, when and by what it was
generated, and rules ``(partition, gpu_type, min_cpus_per_gpu, default_cpus_per_gpu, mode)``
where the most specific match wins. :func:`build_policy` makes the rules from recommendations:

- with a database: one rule per observed (partition, GRES type) from
  :func:`advisor.recommend.recommend_partitions` (default = the recommended ``DefCpuPerGPU``,
  minimum = the cores within ``min_tolerance`` of ample), and a ``(partition, "*")`` rule with
  the partition's largest default, for its other GRES names and untyped requests;
- always: one ``("*", <gres type>)`` rule per GPU family with a known instance price (GRES type =
  the family in lower case, spaces as ``_``, e.g. ``h100``) and a ``("*", "*")`` fallback, from the job
  recommendation at the configured workload (4 GPUs for the fallback).

Renderers: :func:`to_lua` (a Lua 5.1 chunk returning the table), :func:`to_json`, and
:func:`to_slurm_conf` (``PartitionName=... DefCpuPerGPU=N`` lines for the partitions). The
reader, :func:`read_policy`, takes either export back (the report checks compliance with it).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from advisor.errors import InputError, NotFoundError, UsageError
from advisor.progress import ProgressFn, no_progress
from advisor.recommend import PartitionQuery, RecommendContext, Workload, check_tolerance

POLICY_VERSION = 1
WILDCARD = "*"


class Mode(StrEnum):
    advise = "advise"
    set_default_when_unset = "set-default-when-unset"
    enforce_minimum = "enforce-minimum"


@dataclass(frozen=True)
class PolicyRule:
    """Cores per GPU for jobs of one partition and GRES type (``*`` matches any)."""

    partition: str
    gpu_type: str
    min_cpus_per_gpu: int
    default_cpus_per_gpu: int
    mode: Mode


@dataclass(frozen=True)
class Policy:
    version: int
    generated_at: str
    source: str
    rules: tuple[PolicyRule, ...]


@dataclass(frozen=True)
class PolicyConfig:
    """How to build the policy: the mode, the targets, the workload, and the inputs."""

    mode: Mode = Mode.set_default_when_unset
    tolerance: float = 0.10
    min_tolerance: float = 0.50
    workload: Workload = Workload()
    fallback_gpus: int = 4
    db: str | None = None  # None or a missing file: no per-partition rules
    cluster: str | None = None  # the partitions of this cluster only; None: every cluster's
    pricing_file: str | None = None
    model_file: str | None = None


def _specificity(rule: PolicyRule) -> tuple[int, str, str]:
    rank = (0 if rule.partition != WILDCARD else 2) + (0 if rule.gpu_type != WILDCARD else 1)
    return (rank, rule.partition, rule.gpu_type)


def _version() -> str:
    try:
        from importlib.metadata import version

        return f"advisor {version('advisor')}"
    except Exception:
        return "advisor"


def build_policy(
    cfg: PolicyConfig, progress: ProgressFn = no_progress, ctx: RecommendContext | None = None
) -> Policy:
    """Rules from the recommendations (see the module doc), most specific first. Without
    ``ctx``, the configuration's own files are loaded once for the whole build."""
    if not isinstance(cfg.mode, Mode):
        raise UsageError(f"mode must be one of: {', '.join(m.value for m in Mode)}")
    check_tolerance(cfg.tolerance)
    check_tolerance(cfg.min_tolerance, "--min-tolerance")
    if not 0 < cfg.tolerance <= cfg.min_tolerance:
        raise UsageError(
            "need 0 < tolerance <= min tolerance (the default is never below the "
            f"minimum); got {cfg.tolerance} and {cfg.min_tolerance}"
        )
    if ctx is None:
        with RecommendContext.open(
            db=cfg.db, fit_file=cfg.model_file, pricing_file=cfg.pricing_file
        ) as own:
            return build_policy(cfg, progress, own)
    return _build_policy(cfg, progress, ctx)


def _build_policy(cfg: PolicyConfig, progress: ProgressFn, ctx: RecommendContext) -> Policy:
    from advisor.recommend import (
        JobQuery,
        minimum_cores,
        recommend_job,
        recommend_partitions,
        sufficient_cores,
    )

    rules: dict[tuple[str, str], PolicyRule] = {}
    params, book = ctx.params, ctx.book

    def job_rule(partition: str, gres: str, gpu_type: str | None, gpus: int) -> PolicyRule:
        if gpu_type is not None:
            rec = recommend_job(
                JobQuery(
                    gpu_type=gpu_type, gpus=gpus, workload=cfg.workload, tolerance=cfg.tolerance
                ),
                ctx,
            )
            dflt, cap = rec.cpus_per_gpu, rec.max_cpus_per_gpu
            platform: str | None = gpu_type
        else:
            cap = 64
            platform = None
            dflt = sufficient_cores(
                params, gpus=gpus, platform=None, workload=cfg.workload, cap=cap
            ).cpus_per_gpu
        mn = minimum_cores(
            params,
            gpus=gpus,
            platform=platform,
            workload=cfg.workload,
            tolerance=cfg.min_tolerance,
            cap=cap,
        )
        return PolicyRule(partition, gres, min(mn, dflt), dflt, cfg.mode)

    # the priced families and those of the node inventory: cores need no price
    from advisor.recommend import node_inventory

    families = dict.fromkeys(book.gpu_types())
    priced = {f.lower() for f in families}
    families.update((f, None) for f, _, _, _ in node_inventory(ctx) if f not in priced)
    for fam in families:
        gres = fam.lower().replace(" ", "_")
        rules[(WILDCARD, gres)] = job_rule(WILDCARD, gres, fam, cfg.fallback_gpus)
    rules[(WILDCARD, WILDCARD)] = job_rule(WILDCARD, WILDCARD, None, cfg.fallback_gpus)

    if ctx.has_db:
        report = recommend_partitions(
            PartitionQuery(
                db=str(ctx.db_path),
                clusters=(cfg.cluster,) if cfg.cluster else (),
                workload=cfg.workload,
                tolerance=cfg.tolerance,
                min_tolerance=cfg.min_tolerance,
            ),
            progress,
            ctx,
        )
        for r in report.rows:
            if not r.partition:
                continue
            gres = (r.gres_type or (WILDCARD if r.gpu_type == "(untyped)" else r.gpu_type)).lower()
            rules[(r.partition, gres)] = PolicyRule(
                r.partition, gres, r.min_cpus_per_gpu, r.def_cpu_per_gpu, cfg.mode
            )
            # Other GRES names in the same partition (and untyped requests): its largest rule.
            prev = rules.get((r.partition, WILDCARD))
            if prev is None or r.def_cpu_per_gpu > prev.default_cpus_per_gpu:
                rules[(r.partition, WILDCARD)] = PolicyRule(
                    r.partition, WILDCARD, r.min_cpus_per_gpu, r.def_cpu_per_gpu, cfg.mode
                )
    ordered = tuple(sorted(rules.values(), key=_specificity))
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    return Policy(POLICY_VERSION, now.strftime("%Y-%m-%dT%H:%M:%SZ"), _version(), ordered)


def clusters_of(ctx: RecommendContext) -> tuple[str, ...]:
    """The clusters whose jobs the context's database holds (none without a database)."""
    from advisor import datainfo

    con = ctx.connection() if ctx.has_db else None
    return () if con is None else datainfo.filter_options(con).clusters


def check_cluster(ctx: RecommendContext, cluster: str | None) -> None:
    """Refuse a cluster the database holds no jobs of, naming those it holds."""
    if cluster is None:
        return
    held = clusters_of(ctx)
    if cluster not in held:
        names = ", ".join(held) if held else "none (no database, or no jobs loaded)"
        raise NotFoundError(f"--cluster {cluster!r}: the database holds jobs of {names}")


def build_policies(
    cfg: PolicyConfig, progress: ProgressFn = no_progress, ctx: RecommendContext | None = None
) -> list[tuple[str | None, Policy]]:
    """One policy per cluster of the database (its name first), or the one of ``cfg.cluster``;
    one policy without a name when there is no database or it holds one cluster."""
    if ctx is None:
        with RecommendContext.open(
            db=cfg.db, fit_file=cfg.model_file, pricing_file=cfg.pricing_file
        ) as own:
            return build_policies(cfg, progress, own)
    check_cluster(ctx, cfg.cluster)
    held = clusters_of(ctx)
    if cfg.cluster is not None or len(held) < 2:
        return [(cfg.cluster or (held[0] if held else None), build_policy(cfg, progress, ctx))]
    return [(c, build_policy(replace(cfg, cluster=c), progress, ctx)) for c in held]


def _plain(policy: Policy) -> dict[str, Any]:
    return {
        "version": policy.version,
        "generated_at": policy.generated_at,
        "source": policy.source,
        "rules": [
            {
                "partition": r.partition,
                "gpu_type": r.gpu_type,
                "min_cpus_per_gpu": r.min_cpus_per_gpu,
                "default_cpus_per_gpu": r.default_cpus_per_gpu,
                "mode": r.mode.value,
            }
            for r in policy.rules
        ],
    }


def to_json(policy: Policy) -> str:
    """The policy as JSON (the same structure as the Lua table)."""
    return json.dumps(_plain(policy), indent=2) + "\n"


def lua_string(text: str) -> str:
    """A Lua 5.1 double-quoted string literal of ``text`` (any byte escaped as needed)."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif 32 <= code < 127:
            out.append(ch)
        else:
            out.extend(f"\\{b:03d}" for b in ch.encode("utf-8"))
    out.append('"')
    return "".join(out)


def _lua_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot write {value} into a Lua policy")
        return repr(value)
    return lua_string(str(value))


def to_lua(policy: Policy) -> str:
    """A Lua 5.1 chunk that returns the policy table (docs/policy-format.md)."""
    data = _plain(policy)
    lines = [
        "-- CPU-per-GPU policy exported by `advisor policy export --format lua`.",
        "-- Contract: docs/policy-format.md. Most specific rule wins:",
        '-- (partition, gpu_type) > (partition, "*") > ("*", gpu_type) > ("*", "*").',
        "return {",
        f"  version = {data['version']},",
        f"  generated_at = {lua_string(data['generated_at'])},",
        f"  source = {lua_string(data['source'])},",
        "  rules = {",
    ]
    for rule in data["rules"]:
        fields = ", ".join(f"{k} = {_lua_value(v)}" for k, v in rule.items())
        lines.append(f"    {{ {fields} }},")
    lines += ["  },", "}"]
    return "\n".join(lines) + "\n"


# A partition name slurm.conf can carry as one value: `#` starts a comment, spaces and `=`
# split settings, `,` makes a list, and `DEFAULT` names the defaults of every partition.
_SLURM_CONF_NAME = re.compile(r"[A-Za-z0-9_.-]+")


def slurm_conf_unwritable(policy: Policy) -> list[str]:
    """The partition names of ``policy`` that :func:`to_slurm_conf` skips (see its doc)."""
    names = {r.partition for r in policy.rules if r.partition != WILDCARD}
    return sorted(n for n in names if not _slurm_conf_name_ok(n))


def _slurm_conf_name_ok(name: str) -> bool:
    return _SLURM_CONF_NAME.fullmatch(name) is not None and name.upper() != "DEFAULT"


def to_slurm_conf(policy: Policy, cluster: str | None = None) -> str:
    """``PartitionName=P DefCpuPerGPU=N`` for each partition with rules (the largest default
    among its GPU types, since DefCpuPerGPU is per partition), as lines to merge into
    slurm.conf. A name slurm.conf cannot carry (``h100#x``, a space, ``=``, ``,``, ``DEFAULT``,
    anything but letters, digits, ``_ . -``) is skipped with a comment naming it (escaped), and
    the other partitions are still written; :func:`slurm_conf_unwritable` lists them."""
    per_partition: dict[str, int] = {}
    for r in policy.rules:
        if r.partition == WILDCARD:
            continue
        per_partition[r.partition] = max(per_partition.get(r.partition, 0), r.default_cpus_per_gpu)
    lines = [
        f"# DefCpuPerGPU per partition, from advisor policy ({policy.generated_at})"
        + (f", cluster {ascii(cluster)[1:-1]}: its slurm.conf only." if cluster else "."),
        "# Merge into the existing PartitionName lines of slurm.conf; Slurm has no MaxCPUsPerGPU,",
        "# the minimum is enforced by the job_submit plugin (docs/policy-format.md).",
    ]
    if not per_partition:
        fallback = next(
            (r for r in policy.rules if r.partition == WILDCARD and r.gpu_type == WILDCARD), None
        )
        lines.append("# No partitions observed (no database): the cluster-wide default would be")
        if fallback is not None:
            lines.append(f"# DefCpuPerGPU={fallback.default_cpus_per_gpu}")
    for name, value in sorted(per_partition.items()):
        if _slurm_conf_name_ok(name):
            lines.append(f"PartitionName={name} DefCpuPerGPU={value}")
        else:  # ascii() keeps a newline or control character in the name out of the file
            lines.append(f"# skipped partition {ascii(name)}: slurm.conf cannot carry its name")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Reading an export back


def read_policy(path: str | os.PathLike[str]) -> Policy:
    """An exported policy, in either of its forms (docs/policy-format.md): the JSON export
    (``advisor policy export --format json``) or the Lua chunk the Slurm plugins load
    (``--format lua``, e.g. ``/etc/slurm/advisor-policy.lua``). Bad content names the file,
    line and field."""
    p = Path(path)
    src = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise NotFoundError(
            f"{p}: no such policy file; export one with `advisor policy export`"
        ) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc.reason})", source=src) from exc
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", source=src, line=exc.lineno) from exc
        key = '"{}"'  # how a field's name appears in the text, to find its line
    else:
        data = _lua_policy(text, src)
        key = "{} ="
    if not isinstance(data, dict):
        raise InputError("must be a table/object with version and rules", source=src, line=1)
    version = data.get("version")
    if isinstance(version, float) and version.is_integer():
        version = int(version)
    if not isinstance(version, int) or version != POLICY_VERSION:
        raise InputError(
            f"version {version!r} is not {POLICY_VERSION}",
            source=src,
            line=_line_of(text, key.format("version")),
            field="version",
        )
    raw_rules = data.get("rules")
    if raw_rules == {}:
        raw_rules = []  # an empty Lua table
    if not isinstance(raw_rules, list):
        raise InputError(
            "must be a list of rules",
            source=src,
            line=_line_of(text, key.format("rules")),
            field="rules",
        )
    rules = []
    seen: set[tuple[str, str]] = set()
    for i, r in enumerate(raw_rules):
        where = f"rules[{i}]"
        line = _line_of(text, key.format("partition"), i)
        if not isinstance(r, dict):
            raise InputError("must be an object", source=src, line=line, field=where)
        for name in ("partition", "gpu_type", "mode"):
            if not isinstance(r.get(name), str) or not r.get(name):
                raise InputError(
                    "must be a non-empty string", source=src, line=line, field=f"{where}.{name}"
                )
        for name in ("min_cpus_per_gpu", "default_cpus_per_gpu"):
            v = r.get(name)
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not v >= 0
                or not float(v).is_integer()
            ):
                raise InputError(
                    f"{v!r} is not a whole number of cores per GPU (0 or more; Slurm's "
                    "--cpus-per-gpu takes whole cores)",
                    source=src,
                    line=line,
                    field=f"{where}.{name}",
                )
        try:
            mode = Mode(r["mode"])
        except ValueError:
            raise InputError(
                f"{r['mode']!r} is not one of {', '.join(m.value for m in Mode)}",
                source=src,
                line=line,
                field=f"{where}.mode",
            ) from None
        rule_key = (r["partition"], r["gpu_type"].lower())
        if rule_key in seen:
            raise InputError(
                f"a second rule for partition {rule_key[0]!r}, gpu_type {rule_key[1]!r}",
                source=src,
                line=line,
                field=where,
            )
        seen.add(rule_key)
        rules.append(
            PolicyRule(
                rule_key[0],
                rule_key[1],
                _whole(r["min_cpus_per_gpu"]),
                _whole(r["default_cpus_per_gpu"]),
                mode,
            )
        )
    return Policy(
        version, str(data.get("generated_at") or ""), str(data.get("source") or ""), tuple(rules)
    )


def _whole(v: float) -> Any:
    return int(v) if isinstance(v, float) and v.is_integer() else v


_LUA_TOKEN = re.compile(
    r"""(?P<ws>\s+)
      | (?P<comment>--(?!\[\[)[^\n]*)
      | (?P<str>"(?:[^"\\\n]|\\.)*")
      | (?P<num>-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
      | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<punct>[{}=,;])""",
    re.VERBOSE,
)
_LUA_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'"}


def _lua_string(token: str, src: str, line: int) -> str:
    """The value of a double-quoted Lua 5.1 string literal (escapes, decimal ``\\ddd`` bytes)."""
    out = bytearray()
    body = token[1:-1]
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out += ch.encode("utf-8")
            i += 1
            continue
        nxt = body[i + 1]
        if nxt.isdigit():
            digits = re.match(r"\d{1,3}", body[i + 1 :])
            assert digits is not None
            value = int(digits.group())
            if value > 255:
                raise InputError(f"escape \\{digits.group()} is not a byte", source=src, line=line)
            out.append(value)
            i += 1 + len(digits.group())
        elif nxt in _LUA_ESCAPES:
            out += _LUA_ESCAPES[nxt].encode("utf-8")
            i += 2
        else:
            raise InputError(f"unknown escape \\{nxt} in a string", source=src, line=line)
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError("a string is not UTF-8", source=src, line=line) from exc


def _lua_policy(text: str, src: str) -> Any:
    """The value a ``return { ... }`` Lua chunk returns, for the subset policy export writes:
    tables (``name = value`` fields or a list), double-quoted strings, numbers, booleans."""
    tokens: list[tuple[str, str, int]] = []
    pos, line = 0, 1
    while pos < len(text):
        m = _LUA_TOKEN.match(text, pos)
        if m is None:
            raise InputError(
                f"cannot read {text[pos : pos + 20]!r}: not the Lua table that "
                "`advisor policy export --format lua` writes",
                source=src,
                line=line,
            )
        kind = m.lastgroup or ""
        if kind not in ("ws", "comment"):
            tokens.append((kind, m.group(), line))
        line += m.group().count("\n")
        pos = m.end()
    at = 0

    def peek() -> tuple[str, str, int]:
        # past the end: report the line of the last thing read, not the empty line after it
        return tokens[at] if at < len(tokens) else ("eof", "", tokens[-1][2] if tokens else 1)

    def take(expected: str | None = None) -> tuple[str, str, int]:
        nonlocal at
        tok = peek()
        if expected is not None and tok[1] != expected:
            found = tok[1] or "the end of the file"
            raise InputError(f"expected {expected!r}, found {found!r}", source=src, line=tok[2])
        at += 1
        return tok

    def value() -> Any:
        kind, tok, ln = peek()
        if tok == "{":
            return table()
        take()
        if kind == "str":
            return _lua_string(tok, src, ln)
        if kind == "num":
            number = float(tok)
            return int(number) if re.fullmatch(r"-?\d+", tok) else number
        if tok in ("true", "false"):
            return tok == "true"
        raise InputError(f"unexpected {tok or 'end of file'!r}", source=src, line=ln)

    def table() -> Any:
        take("{")
        named: dict[str, Any] = {}
        listed: list[Any] = []
        while peek()[1] != "}":
            kind, tok, _ = peek()
            if kind == "eof":
                take("}")  # says what is missing, and where the file ended
            if kind == "name" and at + 1 < len(tokens) and tokens[at + 1][1] == "=":
                take()
                take("=")
                named[tok] = value()
            else:
                listed.append(value())
            if peek()[1] in (",", ";"):
                take()
            elif peek()[1] != "}":
                take("}")
        take("}")
        if named and listed:
            raise InputError("a table mixes named fields and a list", source=src, line=peek()[2])
        return named if named or not listed else listed

    take("return")
    result = table()
    if at != len(tokens):
        raise InputError(
            f"unexpected {tokens[at][1]!r} after the table", source=src, line=tokens[at][2]
        )
    return result


def _line_of(text: str, needle: str, nth: int = 0) -> int | None:
    """The 1-based line of the ``nth`` occurrence of ``needle`` in ``text`` (None if absent)."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.find(needle, pos + 1)
        if pos < 0:
            return None
    return text.count("\n", 0, pos) + 1
