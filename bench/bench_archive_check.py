"""What checking a compressed source whole costs, against decompressing it to a temporary file.

advisor.ingest.archive.verify decompresses a gzip or zstd file once before the load (CRC-32 /
ISIZE, zstd checksum and content size, truncation) and computes the content hash on the way.
The alternative is to decompress to a temporary plain file and let DuckDB read that: this
prints both, per compression, for a synthetic sacct file of ``--records`` allocations.

    python bench/bench_archive_check.py --records 500000

Timings on a shared 2-core machine are noisy; the best of ``--repeat`` runs is printed.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _best(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    import zstandard

    from advisor.ingest import archive
    from advisor.ingest.synth import SynthConfig, generate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=500_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-archive-") as tmp:
        plain = Path(tmp) / "jobs.txt"
        generate(SynthConfig(records=args.records, seed=5), plain)
        data = plain.read_bytes()
        files = {
            "gzip": Path(tmp) / "jobs.txt.gz",
            "zstd": Path(tmp) / "jobs.txt.zst",
        }
        files["gzip"].write_bytes(gzip.compress(data, compresslevel=6))
        files["zstd"].write_bytes(zstandard.ZstdCompressor(write_checksum=True).compress(data))
        print(f"{args.records} records, {len(data) / 1e6:.1f} MB of text")
        for comp, path in files.items():

            def check(path: Path = path, comp: str = comp) -> None:
                archive.verify(path, comp)

            def to_temp(path: Path = path, comp: str = comp) -> None:
                with tempfile.NamedTemporaryFile(dir=tmp) as out:
                    if comp == "gzip":
                        with gzip.open(path, "rb") as src:
                            shutil.copyfileobj(src, out, 1 << 20)
                    else:
                        with (
                            path.open("rb") as raw,
                            zstandard.ZstdDecompressor().stream_reader(raw) as src,
                        ):
                            shutil.copyfileobj(src, out, 1 << 20)
                    out.flush()

            size = path.stat().st_size / 1e6
            print(
                f"{comp} ({size:.1f} MB): check + sha256 {_best(check, args.repeat):.2f} s,"
                f" decompress to a temp file {_best(to_temp, args.repeat):.2f} s"
            )


if __name__ == "__main__":
    main()
